"""``python -m hermes_env.environments.swe_lite serve|process|evaluate`` (atroposlib's command line)."""

from hermes_env.environments.swe_lite.env import SweLiteEnv

if __name__ == "__main__":
    SweLiteEnv.cli()
