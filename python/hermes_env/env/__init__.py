"""The environment framework: HermesAgentEnvConfig and HermesAgentBaseEnv (atroposlib BaseEnv).

Names load on first access (PEP 562), so ``import hermes_env.env.<module>`` does not pull in
atroposlib's BaseEnv. The exceptions once re-exported here live in :mod:`hermes_env.errors`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hermes_env._lazy import lazy_attributes

if TYPE_CHECKING:
    from hermes_env.env.base_env import GroupTools, HermesAgentBaseEnv
    from hermes_env.env.config import HermesAgentEnvConfig

__all__ = [
    "GroupTools",
    "HermesAgentBaseEnv",
    "HermesAgentEnvConfig",
]

__getattr__ = lazy_attributes(
    __name__,
    {
        "hermes_env.env.base_env": ("GroupTools", "HermesAgentBaseEnv"),
        "hermes_env.env.config": ("HermesAgentEnvConfig",),
    },
    moved={"hermes_env.errors": ("EnvSetupError", "PolicyCallError", "RolloutFailed")},
)


def __dir__() -> list[str]:
    return sorted(__all__)
