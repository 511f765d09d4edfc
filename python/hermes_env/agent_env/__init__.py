"""hermes-agent's ``atropos/`` integration (AgentEnv): ``AgentEnv`` / ``AgentEnvConfig`` on hermes_env's framework.

``from hermes_env import AgentEnv, AgentEnvConfig``; ``ToolCall`` / ``ToolResult`` are what
``exec_tool`` takes and answers in ``setup_trajectory_workspace`` and ``verify_and_score_trajectory``.
"""

from hermes_env.agent_env.calls import ToolCall, ToolResult
from hermes_env.agent_env.config import AgentEnvConfig
from hermes_env.agent_env.env import AgentConfig, AgentEnv

__all__ = ["AgentConfig", "AgentEnv", "AgentEnvConfig", "ToolCall", "ToolResult"]
