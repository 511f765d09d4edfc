"""hermes_env: Atropos environments for tool-using language models.

The hot path (tool-call parsing, trajectory masks) is in the compiled ``hermes_env._core``;
the environment framework is imported lazily so that ``import hermes_env.parsers`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # type checkers and IDEs see the real classes; at runtime they load on first access
    from hermes_env.agent.loop import AgentResult, HermesAgentLoop, ToolError
    from hermes_env.agent_env import AgentEnv, AgentEnvConfig
    from hermes_env.env.base_env import HermesAgentBaseEnv
    from hermes_env.env.config import HermesAgentEnvConfig
    from hermes_env.tool_context import ToolContext

__all__ = [
    "AgentEnv",
    "AgentEnvConfig",
    "AgentResult",
    "HermesAgentBaseEnv",
    "HermesAgentEnvConfig",
    "HermesAgentLoop",
    "ToolContext",
    "ToolError",
]

# name -> module that defines it; resolved on first access (PEP 562).
_LAZY = {
    "AgentEnv": "hermes_env.agent_env",
    "AgentEnvConfig": "hermes_env.agent_env",
    "AgentResult": "hermes_env.agent.loop",
    "HermesAgentLoop": "hermes_env.agent.loop",
    "ToolError": "hermes_env.agent.loop",
    "HermesAgentBaseEnv": "hermes_env.env.base_env",
    "HermesAgentEnvConfig": "hermes_env.env.config",
    "ToolContext": "hermes_env.tool_context",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'hermes_env' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(__all__)
