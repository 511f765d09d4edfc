"""What a reader of a run needs about each rollout beyond its tokens: why it ended and why it scored what it did.

Each written group carries ``rollout_info``, a list aligned with ``tokens``/``scores`` (a key atroposlib
does not know: its API server and trainers ignore it; the HTML view reads it):

- ``task_id``: the item's ``id`` (or ``task_id``) when it has one;
- ``ended``: ``answered`` (the model replied without a tool call), ``length`` (that reply was cut by
  max_tokens), ``max_turns``, ``time_budget``, ``context_full`` or ``error``;
- ``finish_reasons``: the server's finish reason of each turn; ``turns``, ``tool_calls``, ``toolsets``;
- ``tool_errors``: ``{turn, tool, kind, message}`` per failed call (``message`` is what the model read);
- ``reward``: ``score``, ``error`` (the reward raised or timed out), ``checks``: the shell commands the
  reward ran through ``ctx.terminal`` with their exit codes and output tails.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hermes_env.agent.loop import AgentResult
from hermes_env.backends.base import ExecResult

#: Kept per reward check: the last characters of its output, and the last checks of a reward.
CHECK_OUTPUT_CHARS = 2000
MAX_CHECKS = 20


def task_id_of(item: Any) -> str | None:
    """The item's ``id`` (or ``task_id``) when it is a mapping that has one."""
    if isinstance(item, Mapping):
        for key in ("id", "task_id"):
            if item.get(key) is not None:
                return str(item[key])
    return None


def ended_reason(result: AgentResult, max_turns: int) -> str:
    """Why the rollout stopped, in one word (see the module docstring)."""
    if result.error is not None:
        return "time_budget" if result.budget_exhausted else "error"
    if result.finished_naturally:
        return "answered"
    if result.budget_exhausted:
        return "time_budget"
    if result.context_exhausted:
        return "context_full"
    if result.finish_reasons and result.finish_reasons[-1] == "length":
        last = result.messages[-1] if result.messages else {}
        if not last.get("tool_calls"):
            return "length"
    return "max_turns" if result.turns_used >= max_turns else "error"


def reward_checks(log: Sequence[tuple[str, ExecResult]]) -> list[dict[str, Any]]:
    """The reward's ``ctx.terminal`` calls as plain data (the last MAX_CHECKS, output tails only)."""
    return [
        {
            "command": command,
            "exit_code": result.exit_code,
            "timed_out": result.timed_out,
            "output": result.output[-CHECK_OUTPUT_CHARS:],
            "output_cut": len(result.output) > CHECK_OUTPUT_CHARS,
        }
        for command, result in list(log)[-MAX_CHECKS:]
    ]


def rollout_info(
    item: Any,
    result: AgentResult,
    *,
    max_turns: int,
    score: float,
    toolsets: Sequence[str] = (),
    checks: Sequence[tuple[str, ExecResult]] = (),
    reward_error: str | None = None,
) -> dict[str, Any]:
    """The ``rollout_info`` entry of one rollout (JSON-serialisable)."""
    return {
        "task_id": task_id_of(item),
        "ended": ended_reason(result, max_turns),
        "finish_reasons": list(result.finish_reasons),
        "turns": result.turns_used,
        "tool_calls": result.tool_calls_made,
        "toolsets": list(toolsets),
        "tool_errors": [
            {"turn": e.turn, "tool": e.tool_name, "kind": e.kind, "message": e.message} for e in result.tool_errors
        ],
        "reward": {"score": score, "error": reward_error, "checks": reward_checks(checks)},
    }
