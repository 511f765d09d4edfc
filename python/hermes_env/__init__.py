"""hermes_env: Atropos environments for tool-using language models.

The hot path (tool-call parsing, trajectory masks) is in the compiled ``hermes_env._core``;
the environment framework is imported lazily so that ``import hermes_env.parsers`` stays cheap.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from hermes_env._lazy import lazy_attributes


class _NoTorchNotice(logging.Filter):
    """Drops transformers' import-time "PyTorch was not found" notice: hermes_env only needs tokenizers."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("PyTorch was not found")


# Installed before anything imports transformers (atroposlib does, on import).
logging.getLogger("transformers").addFilter(_NoTorchNotice())

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

# module -> the names it defines; each module is imported on first access (PEP 562).
__getattr__ = lazy_attributes(
    __name__,
    {
        "hermes_env.agent_env": ("AgentEnv", "AgentEnvConfig"),
        "hermes_env.agent.loop": ("AgentResult", "HermesAgentLoop", "ToolError"),
        "hermes_env.env": ("HermesAgentBaseEnv", "HermesAgentEnvConfig"),
        "hermes_env.tool_context": ("ToolContext",),
    },
)


def __dir__() -> list[str]:
    return sorted(__all__)
