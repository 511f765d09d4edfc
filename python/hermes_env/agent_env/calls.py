"""``ToolCall`` / ``ToolResult`` and ``exec_tool``: a workspace hook's way to run a tool.

In hermes-agent's ``atropos/`` integration (AgentEnv), ``setup_trajectory_workspace`` and
``verify_and_score_trajectory`` receive ``exec_tool``, an async callable taking a
``ToolCall(name, arguments)`` and answering a ``ToolResult(success, output, error, metadata)``.
hermes_env passes the rollout's :class:`~hermes_env.tool_context.ToolContext`, which is such a
callable (and has the ToolContext methods as well). Tool names are the model's (``terminal``,
``read_file``, ``write_file``, ...), plus that integration's sandbox names ``bash`` (= ``terminal``)
and ``bash_stateful`` (= ``terminal_stateful``). The running itself is
:func:`hermes_env.tool_context.run_tool_call`.
"""

from __future__ import annotations

from hermes_env.agent.steps import TOOL_ALIASES, ToolResult
from hermes_env.agent.steps import AgentToolCall as ToolCall  # upstream's name for it
from hermes_env.tool_context import run_tool_call

__all__ = ["TOOL_ALIASES", "ToolCall", "ToolResult", "run_tool_call"]
