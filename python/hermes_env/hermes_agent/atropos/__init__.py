"""hermes-agent's ``atropos/`` integration (AgentEnv) under its own module paths, on hermes_env.

``atropos.agent``, ``atropos.tools``, ``atropos.envs.agent_env``, ``atropos.backends`` and
``atropos.api.tool_server`` re-export hermes_env's classes with upstream's names, signatures and
semantics, so environment files from that integration run with only their imports changed
(``python -m hermes_env.port``). The Nomad and Modal backends are not here: their environments run
on ``--env.tool_pool_mode local|ray|container`` (the slot pool) or ``--env.terminal_backend
bwrap|docker|local``.
"""
