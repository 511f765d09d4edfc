"""The environment framework: HermesAgentEnvConfig and HermesAgentBaseEnv (atroposlib BaseEnv)."""

from hermes_env.env.base_env import GroupTools, HermesAgentBaseEnv, RolloutFailed
from hermes_env.env.config import HermesAgentEnvConfig

__all__ = ["GroupTools", "HermesAgentBaseEnv", "HermesAgentEnvConfig", "RolloutFailed"]
