"""hermes-agent's ``atropos.backends``: ``ToolBackend`` and ``create_tool_backend``.

Upstream's Nomad and Modal backends are not here (``tool_pool_mode: nomad|modal`` is an error naming
what to use instead); the docker-direct backend is :mod:`.docker_direct_backend`.
"""

from __future__ import annotations

from typing import Any

from hermes_env.hermes_agent.atropos.backends.base import ToolBackend

__all__ = ["ToolBackend", "create_tool_backend"]


def create_tool_backend(config: Any) -> ToolBackend:
    """The backend an ``AgentEnvConfig`` describes (the slot pool, local, bwrap, or docker)."""
    from hermes_env.backends import get_backend

    if config.terminal_backend == "docker":
        from hermes_env.hermes_agent.atropos.backends.docker_direct_backend import DockerDirectBackend

        return DockerDirectBackend(**config.backend_options())
    return get_backend(config.terminal_backend, **config.backend_options())
