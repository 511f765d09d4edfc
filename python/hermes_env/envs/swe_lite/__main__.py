"""``python -m hermes_env.envs.swe_lite serve|process|evaluate`` (atroposlib's command line)."""

from hermes_env.env.cli import run_cli
from hermes_env.envs import configure_logging
from hermes_env.envs.swe_lite.env import SweLiteEnv

if __name__ == "__main__":
    configure_logging()
    run_cli(SweLiteEnv)
