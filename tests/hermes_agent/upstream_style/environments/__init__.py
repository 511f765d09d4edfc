"""Environment files written the way hermes-agent's ``environments/`` are (absolute upstream imports), for the
tests that port them with ``python -m hermes_env.port`` and run the result."""
