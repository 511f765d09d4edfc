"""Seed 004's ``ToolCall`` / ``ToolResult`` and its ``exec_tool``: a workspace hook's way to run a tool.

In seed 004 ``setup_trajectory_workspace`` and ``verify_and_score_trajectory`` receive
``exec_tool``, an async callable taking a ``ToolCall(name, arguments)`` and answering a
``ToolResult(success, output, error, metadata)``. hermes_env passes the rollout's
:class:`~hermes_env.tool_context.ToolContext`, which is such a callable (and has the ToolContext
methods as well). Tool names are the model's (``terminal``, ``read_file``, ``write_file``, ...),
plus seed 004's sandbox names ``bash`` (= ``terminal``) and ``bash_stateful`` (= ``terminal_stateful``).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

# Seed 004's sandbox tool names for the same tools.
SEED_ALIASES = {"bash": "terminal", "bash_stateful": "terminal_stateful"}


@dataclass
class ToolCall:
    """A tool call (seed 004's ``atropos.tools.ToolCall``)."""

    name: str
    arguments: dict[str, Any]
    raw_text: str = ""
    uniq_id: str = field(default_factory=lambda: str(uuid.uuid4()))


@dataclass
class ToolResult:
    """A tool call's outcome (seed 004's ``atropos.tools.ToolResult``)."""

    success: bool
    output: str = ""
    error: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    uniq_id: str | None = None

    def to_xml(self) -> str:
        data: dict[str, Any] = {"success": self.success, "output": self.output}
        if self.uniq_id:
            data["uniq_id"] = self.uniq_id
        if self.error:
            data["error"] = self.error
        if self.metadata:
            data["metadata"] = self.metadata
        return f"<tool_response>{json.dumps(data)}</tool_response>"

    def to_dict(self) -> dict[str, Any]:
        return {
            "success": self.success,
            "output": self.output,
            "error": self.error,
            "metadata": self.metadata,
            "uniq_id": self.uniq_id,
        }


def _call_parts(call: Any) -> tuple[str, dict[str, Any], str | None]:
    if isinstance(call, dict):
        return str(call.get("name", "")), dict(call.get("arguments") or {}), call.get("uniq_id")
    return str(call.name), dict(call.arguments or {}), getattr(call, "uniq_id", None)


async def run_seed_call(ctx: Any, call: Any) -> ToolResult:
    """Run ``call`` (a ToolCall or ``{"name", "arguments"}``) in the context's workspace."""
    name, args, uniq_id = _call_parts(call)
    name = SEED_ALIASES.get(name, name)
    if name == "terminal":
        answer = await ctx.terminal(args.get("command", ""), args.get("timeout"), workdir=args.get("workdir"))
        success = answer.ok
        error = answer["error"] or ("" if success else f"Exit code: {answer['exit_code']}")
        metadata = {"exit_code": answer["exit_code"], "timeout": answer.timed_out}
        return ToolResult(success, answer["output"], error, metadata, uniq_id)
    text = await ctx.call_tool(name, args)
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if isinstance(value, dict):
        error = str(value.get("error") or "")
        output = value.get("content", value.get("output"))
        return ToolResult(
            not error and value.get("success", True) is not False,
            output if isinstance(output, str) else text,
            error,
            value,
            uniq_id,
        )
    error = str(getattr(text, "error", None) or "")
    return ToolResult(not error, str(text), error, {}, uniq_id)
