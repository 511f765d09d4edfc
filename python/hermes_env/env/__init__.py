"""The environment framework: HermesAgentEnvConfig and HermesAgentBaseEnv (atroposlib BaseEnv).

Names load on first access (PEP 562), so the leaf modules here (``errors``) can be imported by
the agent loop and the managed server without pulling in atroposlib's BaseEnv.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes_env.env.base_env import GroupTools, HermesAgentBaseEnv
    from hermes_env.env.config import HermesAgentEnvConfig
    from hermes_env.env.errors import EnvSetupError, PolicyCallError, RolloutFailed

__all__ = [
    "EnvSetupError",
    "GroupTools",
    "HermesAgentBaseEnv",
    "HermesAgentEnvConfig",
    "PolicyCallError",
    "RolloutFailed",
]

_LAZY = {
    "GroupTools": "hermes_env.env.base_env",
    "HermesAgentBaseEnv": "hermes_env.env.base_env",
    "HermesAgentEnvConfig": "hermes_env.env.config",
    "EnvSetupError": "hermes_env.env.errors",
    "PolicyCallError": "hermes_env.env.errors",
    "RolloutFailed": "hermes_env.env.errors",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'hermes_env.env' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(__all__)
