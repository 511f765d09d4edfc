"""The environment framework: HermesAgentEnvConfig and HermesAgentBaseEnv (atroposlib BaseEnv).

Names load on first access (PEP 562), so the leaf modules here (``errors``) can be imported by
the agent loop and the managed server without pulling in atroposlib's BaseEnv.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hermes_env._lazy import lazy_attributes

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

__getattr__ = lazy_attributes(
    __name__,
    {
        "hermes_env.env.base_env": ("GroupTools", "HermesAgentBaseEnv"),
        "hermes_env.env.config": ("HermesAgentEnvConfig",),
        "hermes_env.env.errors": ("EnvSetupError", "PolicyCallError", "RolloutFailed"),
    },
)


def __dir__() -> list[str]:
    return sorted(__all__)
