"""``terminal``: hermes-agent's shell tool, run in the rollout's workspace.

Foreground commands return ``{"output", "exit_code", "error"}`` (output stripped, cut to 50,000
characters keeping 40% head / 60% tail, as hermes-agent does); a command that hits its time limit
answers exit code 124 and an ``error``; a sandbox that fails under the call fails the rollout
(``BackendFailure``; hermes-agent answers exit code -1). ``background=true``
starts a job managed with the ``process`` tool. ``pty`` and ``check_interval`` are accepted
(hermes-agent's schema has them) but have no effect here: commands run without a pseudo-terminal,
and there is no gateway to report progress to.
"""

from __future__ import annotations

import os
import shlex
from typing import Any

from hermes_env.backends.base import ExecResult
from hermes_env.errors import BackendFailure
from hermes_env.tools.process_tool import ProcessRegistry
from hermes_env.tools.registry import Tool, ToolCallContext

MAX_OUTPUT_CHARS = 50_000
HEAD_FRACTION = 0.4

DESCRIPTION = """Execute shell commands on a Linux environment. Filesystem persists between calls.

Do NOT use cat/head/tail to read files — use read_file instead.
Do NOT use grep/rg/find to search — use search_files instead.
Do NOT use ls to list directories — use search_files(target='files') instead.
Do NOT use sed/awk to edit files — use patch instead.
Do NOT use echo/cat heredoc to create files — use write_file instead.
Reserve terminal for: builds, installs, git, processes, scripts, network, package managers, and anything that needs a shell.

Foreground (default): Commands return INSTANTLY when done, even if the timeout is high. Set timeout=300 for long builds/scripts — you'll still get the result in seconds if it's fast. Prefer foreground for everything that finishes.
Background: ONLY for long-running servers, watchers, or processes that never exit. Set background=true to get a session_id, then use process(action="wait") to block until done — it returns instantly on completion, same as foreground. Use process(action="poll") only when you need a progress check without blocking.
Do NOT use background for scripts, builds, or installs — foreground with a generous timeout is always better (fewer tool calls, instant results).
Working directory: Use 'workdir' for per-command cwd.
PTY mode: Set pty=true for interactive CLI tools (Codex, Claude Code, Python REPL).

Do NOT use vim/nano/interactive tools without pty=true — they hang without a pseudo-terminal. Pipe git output to cat if it might page.
"""  # noqa: E501 - hermes-agent's text, kept as the model was trained on it


def cut_output(output: str, limit: int = MAX_OUTPUT_CHARS) -> str:
    """hermes-agent's cut: 40% head, 60% tail, and how much was left out."""
    if len(output) <= limit:
        return output
    head = int(limit * HEAD_FRACTION)
    tail = limit - head
    omitted = len(output) - head - tail
    notice = f"\n\n... [OUTPUT TRUNCATED - {omitted} chars omitted out of {len(output)} total] ...\n\n"
    return output[:head] + notice + output[-tail:]


def with_workdir(command: str, workdir: str | None) -> str:
    return f"cd {shlex.quote(workdir)} && {command}" if workdir else command


def terminal_answer(result: ExecResult, timeout: float) -> dict[str, Any]:
    """hermes-agent's answer for one finished foreground command (also what ToolContext.terminal returns).

    A backend that could not run the command (a dead worker, a sandbox that failed) raises
    :class:`BackendFailure` instead: the rollout fails rather than showing the model hermes-agent's
    ``exit_code -1`` answer for a crash that was not its doing.
    """
    if result.error is not None:
        raise BackendFailure(result.error)
    output = cut_output(result.output.strip())
    if result.timed_out:
        return {"output": output, "exit_code": 124, "error": f"Command timed out after {timeout:g} seconds"}
    return {"output": output, "exit_code": result.exit_code, "error": None}


async def run_command(ctx: ToolCallContext, command: str, timeout: float, workdir: str | None = None) -> dict[str, Any]:
    result = await ctx.backend.execute(ctx.task_id, with_workdir(command, workdir), timeout)
    return terminal_answer(result, timeout)


class TerminalTool(Tool):
    name = "terminal"
    toolset = "terminal"
    description = DESCRIPTION
    parameters = {
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The command to execute on the VM"},
            "background": {
                "type": "boolean",
                "description": "ONLY for servers/watchers that never exit. For scripts, builds, installs — use "
                "foreground with timeout instead (it returns instantly when done).",
                "default": False,
            },
            "timeout": {
                "type": "integer",
                "description": "Max seconds to wait (default: 180). Returns INSTANTLY when command finishes — set "
                "high for long tasks, you won't wait unnecessarily.",
                "minimum": 1,
            },
            "workdir": {
                "type": "string",
                "description": "Working directory for this command (absolute path). Defaults to the session working "
                "directory.",
            },
            "check_interval": {
                "type": "integer",
                "description": "Seconds between automatic status checks for background processes (gateway/messaging "
                "only, minimum 30). When set, I'll proactively report progress.",
                "minimum": 30,
            },
            "pty": {
                "type": "boolean",
                "description": "Run in pseudo-terminal (PTY) mode for interactive CLI tools like Codex, Claude Code, "
                "or Python REPL. Only works with local and SSH backends. Default: false.",
                "default": False,
            },
        },
        "required": ["command"],
    }
    # Commands of one turn often depend on each other's effects (mkdir, then write into it).
    parallel_safe = False
    check_bounds = False

    def is_available(self) -> bool:
        # Every backend runs commands through a POSIX shell.
        return os.path.exists("/bin/sh")

    async def call(self, args: dict[str, Any], ctx: ToolCallContext) -> dict[str, Any]:
        command, workdir = args["command"], args.get("workdir") or None
        requested = args.get("timeout")
        timeout = ctx.clamp_timeout(requested)
        if args.get("background"):
            job = await ProcessRegistry.of(ctx).spawn(ctx, command, workdir)
            if job.exited and job.exit_code not in (0, None) and not job.pid:
                failed = await ProcessRegistry.of(ctx).output(ctx, job)
                return {"output": "", "exit_code": -1, "error": f"Failed to start background process: {failed}"}
            return {
                "output": "Background process started",
                "session_id": job.id,
                "pid": job.pid,
                "exit_code": 0,
                "error": None,
            }
        answer = await run_command(ctx, command, timeout, workdir)
        if requested is not None and float(requested) > timeout:
            answer["timeout_note"] = f"Requested timeout {requested}s was clamped to configured limit of {timeout:g}s"
        return answer
