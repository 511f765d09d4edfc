"""Seed 004's ``AgentEnv`` front door (work in progress)."""

from hermes_env.agent_env.calls import ToolCall, ToolResult

__all__ = ["ToolCall", "ToolResult"]
