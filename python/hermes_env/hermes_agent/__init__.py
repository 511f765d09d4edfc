"""hermes-agent compatibility: upstream's module paths, for environment files ported with ``python -m hermes_env.port``."""
