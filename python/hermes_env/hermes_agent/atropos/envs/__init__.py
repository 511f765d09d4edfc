"""hermes-agent's ``atropos.envs``: ``AgentEnv`` / ``AgentEnvConfig`` (``atropos.envs.agent_env``)."""
