"""What a reader of a run needs about each rollout beyond its tokens and ``end_reasons``: why it scored what it did.

Each written group carries ``rollout_info``, a list aligned with ``tokens``/``scores`` (a key atroposlib
does not know: its API server and trainers ignore it; the HTML view reads it, with ``end_reasons``):

- ``task_id``: the item's ``id`` (or ``task_id``) when it has one;
- ``finish_reasons``: the server's finish reason of each turn; ``turns``, ``tool_calls``, ``toolsets``;
- ``tool_errors``: ``{turn, tool, kind, message}`` per failed call (``message`` is what the model read);
- ``parse_issues``: ``{turn, kind, message}`` per call the model wrote that could not be read;
- ``reward``: ``score``, ``error`` (the reward raised or timed out), ``checks``: the shell commands the
  reward ran through ``ctx.terminal`` with their exit codes and output tails.

Turns are 0-based model-turn indices, as in :class:`~hermes_env.agent.loop.AgentResult`.
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
    score: float,
    toolsets: Sequence[str] = (),
    checks: Sequence[tuple[str, ExecResult]] = (),
    reward_error: str | None = None,
) -> dict[str, Any]:
    """The ``rollout_info`` entry of one rollout (JSON-serialisable)."""
    return {
        "task_id": task_id_of(item),
        "finish_reasons": list(result.finish_reasons),
        "turns": result.turns_used,
        "tool_calls": result.tool_calls_made,
        "toolsets": list(toolsets),
        "tool_errors": [
            {"turn": e.turn, "tool": e.tool_name, "kind": e.kind, "message": e.message} for e in result.tool_errors
        ],
        "parse_issues": [{"turn": p.turn, "kind": p.kind, "message": p.message} for p in result.parse_issues],
        "reward": {"score": score, "error": reward_error, "checks": reward_checks(checks)},
    }
