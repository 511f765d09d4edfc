"""hermes-agent's ``environments.tool_context``: ``ToolContext(task_id)`` finds the task's sandbox by its id.

The object is hermes_env's :class:`hermes_env.tool_context.ToolContext` (every method with and without
``await``; hermes-agent's result dicts), the one the task's agent loop used: made by the environment for
its rollouts, or on first use for a task id an environment file chose itself (TerminalBench2's
``rollout_and_score_eval``), with that task's ``register_task_env_overrides`` image.
"""

from __future__ import annotations

from typing import Any

from hermes_env.hermes_agent.tools.terminal_tool import task_context
from hermes_env.tool_context import ToolContext as _ToolContext


class ToolContext(_ToolContext):
    """``ToolContext(task_id)``: the sandbox of ``task_id``; ``ToolContext(task_id, backend, ...)`` as hermes_env's."""

    def __new__(cls, task_id: str, backend: Any = None, **kwargs: Any) -> Any:
        if backend is None:
            return task_context(task_id)  # not a new object: __init__ is not run on it again
        return super().__new__(cls)


__all__ = ["ToolContext"]
