"""``terminal``: run a shell command in the rollout's workspace."""

from __future__ import annotations

import os
from typing import Any

from hermes_env.backends.base import BackendFailure
from hermes_env.tools.output import truncate_middle
from hermes_env.tools.registry import Tool, ToolRunContext
from hermes_env.tools.schema import object_schema


class TerminalTool(Tool):
    name = "terminal"
    toolset = "terminal"
    description = (
        "Run a shell command (bash) in the task's workspace directory and return its combined "
        "stdout/stderr and exit code. Each call starts a fresh shell in the workspace: `cd` and "
        "environment variables do not carry over, and background processes end with the call. "
        "Long outputs are truncated; prefer commands that print only what you need."
    )
    parameters = object_schema(
        {
            "command": {"type": "string", "minLength": 1, "description": "The shell command to run."},
            "timeout": {
                "type": "number",
                "minimum": 1,
                "description": "Seconds before the command is killed (capped by the environment's limit).",
            },
        },
        required=("command",),
    )
    # Commands of one turn often depend on each other's effects (mkdir, then write into it).
    parallel_safe = False

    def is_available(self) -> bool:
        # Every backend runs commands through a POSIX shell.
        return os.path.exists("/bin/sh")

    async def call(self, args: dict[str, Any], ctx: ToolRunContext) -> str:
        timeout = ctx.clamp_timeout(args.get("timeout"))
        result = await ctx.backend.execute(ctx.task_id, args["command"], timeout)
        if result.error is not None:
            raise BackendFailure(result.error)
        if result.timed_out:
            status = f"[exit code {result.exit_code}; timed out after {timeout:g}s]"
        else:
            status = f"[exit code {result.exit_code}]"
        body = result.output.rstrip("\n")
        # Leave room for the status line so it is never cut off.
        body = truncate_middle(body, max(100, ctx.max_output_chars - len(status) - 2))
        return f"{body}\n{status}" if body else status
