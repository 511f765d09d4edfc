"""The environment framework: HermesAgentEnvConfig and HermesAgentBaseEnv (atroposlib BaseEnv).

Names load on first access (PEP 562), so ``import hermes_env.env.<module>`` does not pull in
atroposlib's BaseEnv. The exceptions once re-exported here live in :mod:`hermes_env.errors`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hermes_env._lazy import lazy_attributes
from hermes_env._renamed import old_names

if TYPE_CHECKING:
    from hermes_env.env.base_env import GroupTools, HermesAgentBaseEnv
    from hermes_env.env.config import HermesAgentEnvConfig

__all__ = [
    "GroupTools",
    "HermesAgentBaseEnv",
    "HermesAgentEnvConfig",
]

# The exceptions this package once re-exported (now hermes_env.errors') still work for a release
# (hermes_env._renamed.OLD_NAMES), each with a warning once.
__getattr__ = old_names(
    __name__,
    then=lazy_attributes(
        __name__,
        {
            "hermes_env.env.base_env": ("GroupTools", "HermesAgentBaseEnv"),
            "hermes_env.env.config": ("HermesAgentEnvConfig",),
        },
    ),
)


def __dir__() -> list[str]:
    return sorted(__all__)
