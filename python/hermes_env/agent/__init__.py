"""The agent loop: multi-turn tool calling against a chat-completion server."""

from hermes_env.agent.loop import AgentResult, HermesAgentLoop, ToolError
from hermes_env.agent.reasoning import extract_reasoning
from hermes_env.agent.tool_pool import ToolWorkerPool

__all__ = ["AgentResult", "HermesAgentLoop", "ToolError", "ToolWorkerPool", "extract_reasoning"]
