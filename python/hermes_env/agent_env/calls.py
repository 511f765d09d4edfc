"""``ToolCall`` / ``ToolResult`` and ``exec_tool``: a workspace hook's way to run a tool.

In hermes-agent's ``atropos/`` integration (AgentEnv), ``setup_trajectory_workspace`` and
``verify_and_score_trajectory`` receive ``exec_tool``, an async callable taking a
``ToolCall(name, arguments)`` and answering a ``ToolResult(success, output, error, metadata)``.
hermes_env passes the rollout's :class:`~hermes_env.tool_context.ToolContext`, which is such a
callable (and has the ToolContext methods as well). Tool names are the model's (``terminal``,
``read_file``, ``write_file``, ...), plus that integration's sandbox names ``bash`` (= ``terminal``)
and ``bash_stateful`` (= ``terminal_stateful``).
"""

from __future__ import annotations

from typing import Any

from hermes_env.agent.steps import TOOL_ALIASES, ToolResult, tool_result_from_text
from hermes_env.agent.steps import AgentToolCall as ToolCall  # upstream's name for it

__all__ = ["TOOL_ALIASES", "ToolCall", "ToolResult", "run_tool_call"]


def _call_parts(call: Any) -> tuple[str, dict[str, Any], str | None]:
    if isinstance(call, dict):
        return str(call.get("name", "")), dict(call.get("arguments") or {}), call.get("uniq_id")
    return str(call.name), dict(call.arguments or {}), getattr(call, "uniq_id", None)


async def run_tool_call(ctx: Any, call: Any) -> ToolResult:
    """Run ``call`` (a ToolCall or ``{"name", "arguments"}``) in the context's workspace."""
    name, args, uniq_id = _call_parts(call)
    name = TOOL_ALIASES.get(name, name)
    if name == "terminal":
        answer = await ctx.terminal(args.get("command", ""), args.get("timeout"), workdir=args.get("workdir"))
        success = answer.ok
        error = answer["error"] or ("" if success else f"Exit code: {answer['exit_code']}")
        metadata = {"exit_code": answer["exit_code"], "timeout": answer.timed_out}
        return ToolResult(success, answer["output"], error, metadata, uniq_id)
    text = await ctx.call_tool(name, args)
    error = str(getattr(text, "error", None) or "")
    result = tool_result_from_text(name, str(text), uniq_id)
    if error and result.success:  # an error carried on the text object, not in its JSON
        return ToolResult(False, result.output, error, result.metadata, uniq_id)
    return result
