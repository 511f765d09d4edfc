"""hermes-agent's ``environments`` package: ``hermes_base_env``, ``agent_loop``, ``tool_context``."""
