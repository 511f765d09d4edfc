"""hermes-agent's ``atropos.tools``: tool calls and results, the tool registry and its builder."""

from hermes_env.hermes_agent.atropos.tools.base import Tool, ToolCall, ToolRegistry, ToolResult, ToolSchema
from hermes_env.hermes_agent.atropos.tools.build_registry import build_tool_registry

__all__ = ["Tool", "ToolCall", "ToolRegistry", "ToolResult", "ToolSchema", "build_tool_registry"]
