"""swe_lite: small Python repositories with one bug each; reward from hidden tests (see env.py)."""

from hermes_env.environments.swe_lite.env import SweLiteConfig, SweLiteEnv

__all__ = ["SweLiteConfig", "SweLiteEnv"]
