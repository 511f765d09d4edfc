"""The environment framework: HermesAgentEnvConfig and HermesAgentBaseEnv (atroposlib BaseEnv)."""

from hermes_env.env.base_env import GroupTools, HermesAgentBaseEnv
from hermes_env.env.config import HermesAgentEnvConfig
from hermes_env.env.errors import EnvSetupError, RolloutFailed

__all__ = ["EnvSetupError", "GroupTools", "HermesAgentBaseEnv", "HermesAgentEnvConfig", "RolloutFailed"]
