"""Background processes of one rollout (``terminal(background=true)``) and hermes-agent's ``process`` tool.

Every job writes its output to ``.hermes_bg/<id>.log`` in the workspace (so ``poll``/``log`` see
it while it runs) and reads its stdin from a FIFO beside it (``write``/``submit`` reach it from
later calls, which run in their own process, even in another PID namespace). A holder process
keeps the FIFO's write end open, so the job sees end-of-file only when ``close`` releases the
holder (a line written to a second FIFO, ``<id>.ctl``), never between two writes. The job keeps
that control FIFO's write end too, so the holder also ends with the job. All of it is POSIX
``sh``: a container image may have no bash.
How a job is kept alive depends on the backend:

- where each command is its own process (``local``, ``bwrap``): the job is one ``execute`` call
  the agent does not wait for, an asyncio task bounded by ``background_timeout``; ``kill``
  cancels it, which kills its process group;
- on the slot pool, whose slot runs one call at a time: the job is started from the slot's
  stateful shell (``bash_stateful``) in its own process group, and its status and exit code are
  asked of that shell; ``kill`` signals the group.

The rollout's cleanup kills whatever is still running. The result shapes are hermes-agent's
(``tools/process_registry.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from hermes_env.backends.base import ExecResult
from hermes_env.tools.registry import Tool, ToolCallContext

BG_DIR = ".hermes_bg"
STATE_KEY = "processes"
MAX_OUTPUT_CHARS = 200_000  # the rolling window hermes-agent keeps per process
WAIT_POLL_SECONDS = 0.2
STDIN_WRITE_TIMEOUT = 10.0
KILLED_EXIT_CODE = -9
PID_WAIT_SECONDS = 10.0


@dataclass
class BackgroundJob:
    id: str
    command: str
    cwd: str | None
    started_at: float
    task: asyncio.Task[ExecResult] | None = None
    exit_code: int | None = None
    pid: int | None = None
    killed: bool = False
    stdin_closed: bool = False
    final_output: str | None = None
    hidden: bool = False  # a job of another tool (execute_code): not listed by process(action="list")
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def log_path(self) -> str:
        return f"{BG_DIR}/{self.id}.log"

    @property
    def stdin_path(self) -> str:
        return f"{BG_DIR}/{self.id}.in"

    @property
    def control_path(self) -> str:
        return f"{BG_DIR}/{self.id}.ctl"

    @property
    def exited(self) -> bool:
        return self.exit_code is not None


def _prepare(job: BackgroundJob) -> str:
    d = f'"$PWD/{BG_DIR}"'
    return f"mkdir -p {d} && rm -f {d}/{job.id}.in {d}/{job.id}.ctl && mkfifo {d}/{job.id}.in {d}/{job.id}.ctl"


def _stdin_fds(job: BackgroundJob) -> str:
    """Redirections opening the job's FIFOs: 3 = stdin (read-write), 8 = control (read-write), 7 = control (read).

    All three are opened by the shell that starts the job, before anything forks: an open of a
    FIFO for reading alone waits for a writer, and 8 is that writer.
    """
    d = f'"$PWD/{BG_DIR}"'
    return f"3<>{d}/{job.id}.in 8<>{d}/{job.id}.ctl 7<{d}/{job.id}.ctl"


# The holder keeps fd 3 (the stdin FIFO's write end) until a line arrives on the control FIFO
# (``close``) or the control FIFO's last writer, the job, is gone. It drops its own copy of that
# writer first, or it would never see the end.
_HOLDER = "( exec 8>&-; read -r _ <&7 ) </dev/null >/dev/null 2>&1"


def _job_command(job: BackgroundJob, launcher: str = "exec") -> str:
    """The job itself: its stdin the FIFO, its output the log; it keeps fd 8, the holder's lifeline."""
    d = f'"$PWD/{BG_DIR}"'
    command = f"{launcher} bash -c {shlex.quote(job.command)} <{d}/{job.id}.in >{d}/{job.id}.log 2>&1 3>&- 7<&-"
    return f"cd {shlex.quote(job.cwd)} && {command}" if job.cwd else command


def job_script(job: BackgroundJob) -> str:
    """A job run as one ``execute`` call: its pid written first, its exit status the call's."""
    return (
        f'{_prepare(job)} && echo $$ > "$PWD/{BG_DIR}/{job.id}.pid" && exec {_stdin_fds(job)} && '
        f"{{ {_HOLDER} & }} && {_job_command(job)}"
    )


def shell_job_script(job: BackgroundJob) -> str:
    """A job started from a stateful shell, in its own process group; prints its pid.

    The FIFOs are opened for the group only, so the shell itself holds none of them afterwards.
    """
    return f"{_prepare(job)} && {{ {_HOLDER} & {{ {_job_command(job, 'setsid')} & }} && echo $!; }} {_stdin_fds(job)}"


def uses_stateful_shell(ctx: ToolCallContext) -> bool:
    """Whether background jobs live in the backend's stateful shell (the slot pool) rather than in calls."""
    return callable(getattr(ctx.backend, "call_tool", None))


class ProcessRegistry:
    """The background jobs of one rollout (kept in ``ToolCallContext.state``)."""

    def __init__(self) -> None:
        self.jobs: dict[str, BackgroundJob] = {}

    @classmethod
    def of(cls, ctx: ToolCallContext) -> ProcessRegistry:
        registry = ctx.state.get(STATE_KEY)
        if registry is None:
            registry = ctx.state[STATE_KEY] = cls()
        return registry

    async def spawn(
        self, ctx: ToolCallContext, command: str, cwd: str | None = None, *, hidden: bool = False
    ) -> BackgroundJob:
        job = BackgroundJob(
            id=f"proc_{uuid.uuid4().hex[:12]}", command=command, cwd=cwd, started_at=time.time(), hidden=hidden
        )
        if uses_stateful_shell(ctx):
            self.jobs[job.id] = job
            started = await ctx.backend.call_tool(
                ctx.task_id, "bash_stateful", {"command": shell_job_script(job)}, STDIN_WRITE_TIMEOUT
            )
            pid = started.output.strip().splitlines()[-1:] if started.ok else []
            if pid and pid[0].isdigit():
                job.pid = int(pid[0])
            else:
                job.exit_code, job.final_output = -1, started.error or started.output
            return job

        async def run() -> ExecResult:
            try:
                result = await ctx.backend.execute(ctx.task_id, job_script(job), ctx.background_timeout)
            except asyncio.CancelledError:
                job.exit_code = KILLED_EXIT_CODE
                raise
            except Exception as exc:  # noqa: BLE001 - a failed start is the job's result, not a crash
                result = ExecResult(output=f"Failed to start: {exc}", exit_code=-1, error=str(exc))
            if job.exit_code is None:
                job.exit_code = result.exit_code if result.error is None else -1
            job.final_output = result.output
            return result

        job.task = asyncio.create_task(run(), name=f"hermes-bg-{job.id}")
        self.jobs[job.id] = job
        # The job writes its pid as its first act (a sandbox may take a while to start): the answer carries it.
        job.pid = await self._read_pid(ctx, job, wait=PID_WAIT_SECONDS)
        return job

    async def _read_pid(self, ctx: ToolCallContext, job: BackgroundJob, wait: float) -> int | None:
        deadline = time.monotonic() + wait
        while True:
            with contextlib.suppress(OSError, ValueError):
                text = (await ctx.backend.read_file(ctx.task_id, f"{BG_DIR}/{job.id}.pid")).decode().strip()
                if text.isdigit():
                    return int(text)
            if job.exited or time.monotonic() >= deadline:
                return None
            await asyncio.sleep(0.05)

    async def output(self, ctx: ToolCallContext, job: BackgroundJob) -> str:
        """Everything the job wrote so far (its last 200,000 characters)."""
        try:
            text = (await ctx.backend.read_file(ctx.task_id, job.log_path)).decode("utf-8", errors="replace")
        except (OSError, ValueError):
            text = ""
        if not text and job.final_output and job.exit_code not in (0, None):
            text = job.final_output  # the job never got as far as its log (bad cwd, sandbox failure)
        return text[-MAX_OUTPUT_CHARS:]

    async def refresh(self, ctx: ToolCallContext, job: BackgroundJob) -> None:
        """For a job of the stateful shell: ask the shell whether it still runs, and its exit status."""
        if job.exited or job.task is not None or job.pid is None:
            return
        probe = (
            f"if kill -0 {job.pid} 2>/dev/null; then echo running; else wait {job.pid} 2>/dev/null; echo exited:$?; fi"
        )
        answer = await ctx.backend.call_tool(ctx.task_id, "bash_stateful", {"command": probe}, STDIN_WRITE_TIMEOUT)
        last = (answer.output.strip().splitlines() or [""])[-1]
        if last.startswith("exited:"):
            job.exit_code = int(last.removeprefix("exited:"))
        elif not answer.ok and answer.error:
            job.exit_code = -1  # the shell (and with it the job) is gone

    def _status(self, job: BackgroundJob) -> str:
        return "exited" if job.exited else "running"

    def _not_found(self, session_id: str) -> dict[str, Any]:
        return {"status": "not_found", "error": f"No process with ID {session_id}"}

    async def poll(self, ctx: ToolCallContext, session_id: str) -> dict[str, Any]:
        job = self.jobs.get(session_id)
        if job is None:
            return self._not_found(session_id)
        await self.refresh(ctx, job)
        out = await self.output(ctx, job)
        result: dict[str, Any] = {
            "session_id": job.id,
            "command": job.command,
            "status": self._status(job),
            "pid": job.pid,
            "uptime_seconds": int(time.time() - job.started_at),
            "output_preview": out[-1000:],
        }
        if job.exited:
            result["exit_code"] = job.exit_code
        return result

    async def read_log(self, ctx: ToolCallContext, session_id: str, offset: int = 0, limit: int = 200) -> dict:
        job = self.jobs.get(session_id)
        if job is None:
            return self._not_found(session_id)
        await self.refresh(ctx, job)
        lines = (await self.output(ctx, job)).splitlines()
        selected = lines[-limit:] if offset == 0 and limit > 0 else lines[offset : offset + limit]
        return {
            "session_id": job.id,
            "status": self._status(job),
            "output": "\n".join(selected),
            "total_lines": len(lines),
            "showing": f"{len(selected)} lines",
        }

    async def wait(self, ctx: ToolCallContext, session_id: str, timeout: float | None = None) -> dict[str, Any]:
        job = self.jobs.get(session_id)
        if job is None:
            return self._not_found(session_id)
        limit = float(ctx.max_timeout or ctx.timeout)
        note = None
        if timeout and timeout > limit:
            note = f"Requested wait of {timeout:g}s was clamped to configured limit of {limit:g}s"
            effective = limit
        else:
            effective = float(timeout or limit)
        if job.task is not None and not job.exited:
            with contextlib.suppress(TimeoutError, asyncio.CancelledError, Exception):
                await asyncio.wait_for(asyncio.shield(job.task), effective)
        deadline = time.monotonic() + effective
        await self.refresh(ctx, job)
        while job.task is None and not job.exited and time.monotonic() < deadline:
            await asyncio.sleep(min(WAIT_POLL_SECONDS, max(0.0, deadline - time.monotonic())))
            await self.refresh(ctx, job)
        out = await self.output(ctx, job)
        if job.exited:
            result: dict[str, Any] = {"status": "exited", "exit_code": job.exit_code, "output": out[-2000:]}
        else:
            result = {"status": "timeout", "output": out[-1000:]}
            note = note or f"Waited {effective:g}s, process still running"
        if note:
            result["timeout_note"] = note
        return result

    async def kill(self, ctx: ToolCallContext, session_id: str) -> dict[str, Any]:
        job = self.jobs.get(session_id)
        if job is None:
            return self._not_found(session_id)
        await self.refresh(ctx, job)
        if job.exited:
            return {"status": "already_exited", "exit_code": job.exit_code}
        await self._stop(job, ctx)
        return {"status": "killed", "session_id": job.id}

    async def _stop(self, job: BackgroundJob, ctx: ToolCallContext | None = None) -> None:
        job.killed = True
        if job.task is None and job.pid is not None and ctx is not None and not job.exited:
            # Reaped here, so the shell's "Killed" notice goes nowhere rather than into the next command's output.
            stop = f"{{ kill -KILL -- -{job.pid}; wait {job.pid}; }} 2>/dev/null; true"
            await ctx.backend.call_tool(ctx.task_id, "bash_stateful", {"command": stop}, 10)
        task = job.task
        if task is not None and not task.done():
            if task.get_loop() is asyncio.get_running_loop():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            else:
                # Stopped from a synchronous ToolContext call (another loop): the job's own loop
                # cancels it once it runs again; the workspace cleanup that follows kills it too.
                task.get_loop().call_soon_threadsafe(task.cancel)
        if job.exit_code is None:
            job.exit_code = KILLED_EXIT_CODE

    async def write(self, ctx: ToolCallContext, session_id: str, data: str) -> dict[str, Any]:
        return await self._send(ctx, session_id, data, {"status": "ok", "bytes_written": len(data)})

    async def close(self, ctx: ToolCallContext, session_id: str) -> dict[str, Any]:
        """End the job's stdin (it reads end-of-file) without stopping it; hermes-agent's ``close``."""
        return await self._send(ctx, session_id, "\n", {"status": "ok", "message": "stdin closed"}, control=True)

    async def _send(
        self, ctx: ToolCallContext, session_id: str, data: str, ok: dict[str, Any], *, control: bool = False
    ) -> dict[str, Any]:
        """Write ``data`` to a running job's stdin FIFO or, with ``control``, the line that releases its holder."""
        job = self.jobs.get(session_id)
        if job is None:
            return self._not_found(session_id)
        await self.refresh(ctx, job)
        if job.exited:
            return {"status": "already_exited", "error": "Process has already finished"}
        if job.stdin_closed:
            return {"status": "error", "error": "Process stdin not available (stdin closed)"}
        # Opened read-write, a FIFO never blocks the writer, even if nothing reads it any more.
        fifo = shlex.quote(job.control_path if control else job.stdin_path)
        result = await ctx.backend.execute(ctx.task_id, f"cat 1<> {fifo}", STDIN_WRITE_TIMEOUT, stdin=data)
        if result.exit_code != 0:
            return {"status": "error", "error": result.error or result.output.strip() or "could not write to stdin"}
        job.stdin_closed = control
        return ok

    async def list(self, ctx: ToolCallContext) -> list[dict[str, Any]]:
        out = []
        for job in self.jobs.values():
            if job.hidden:
                continue
            await self.refresh(ctx, job)
            text = await self.output(ctx, job)
            entry: dict[str, Any] = {
                "session_id": job.id,
                "command": job.command[:200],
                "cwd": job.cwd,
                "pid": job.pid,
                "started_at": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(job.started_at)),
                "uptime_seconds": int(time.time() - job.started_at),
                "status": self._status(job),
                "output_preview": text[-200:],
            }
            if job.exited:
                entry["exit_code"] = job.exit_code
            out.append(entry)
        return out

    def running(self) -> list[BackgroundJob]:
        return [job for job in self.jobs.values() if not job.exited]

    async def kill_all(self, ctx: ToolCallContext | None = None) -> int:
        """Stop every running job (the rollout ends); returns how many were running.

        Jobs of a stateful shell die with the slot's shell when the workspace is reset; with ``ctx``
        they are signalled first.
        """
        running = self.running()
        for job in running:
            await self._stop(job, ctx)
        return len(running)


def has_running_processes(state: dict[str, Any]) -> bool:
    """Whether a rollout's tool state holds a background job not known to have ended."""
    registry = state.get(STATE_KEY)
    return isinstance(registry, ProcessRegistry) and bool(registry.running())


async def kill_all_processes(state: dict[str, Any], ctx: ToolCallContext | None = None) -> int:
    """Stop the background jobs recorded in a rollout's tool state (none: 0)."""
    registry = state.get(STATE_KEY)
    return await registry.kill_all(ctx) if isinstance(registry, ProcessRegistry) else 0


ACTIONS = ["list", "poll", "log", "wait", "kill", "write", "submit"]
# Newer hermes-agent adds "close" (stdin EOF). It is answered here too, but the schema stays the
# pinned upstream's (tests/data/hermes_agent/tool_schemas.json), so the model's prompt is unchanged.
EXTRA_ACTIONS = ["close"]


class ProcessTool(Tool):
    name = "process"
    toolset = "terminal"
    description = (
        "Manage background processes started with terminal(background=true). "
        "Actions: 'list' (show all), 'poll' (check status + new output), "
        "'log' (full output with pagination), 'wait' (block until done or timeout), "
        "'kill' (terminate), 'write' (send raw stdin data without newline), "
        "'submit' (send data + Enter, for answering prompts)."
    )
    parameters = {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ACTIONS, "description": "Action to perform on background processes"},
            "session_id": {
                "type": "string",
                "description": "Process session ID (from terminal background output). Required for all actions "
                "except 'list'.",
            },
            "data": {
                "type": "string",
                "description": "Text to send to process stdin (for 'write' and 'submit' actions)",
            },
            "timeout": {
                "type": "integer",
                "description": "Max seconds to block for 'wait' action. Returns partial output on timeout.",
                "minimum": 1,
            },
            "offset": {"type": "integer", "description": "Line offset for 'log' action (default: last 200 lines)"},
            "limit": {"type": "integer", "description": "Max lines to return for 'log' action", "minimum": 1},
        },
        "required": ["action"],
    }
    check_bounds = False

    def validate(self, args: Any) -> dict[str, Any]:
        # Models send session ids as numbers too; hermes-agent coerces them to strings.
        if isinstance(args, dict) and isinstance(args.get("session_id"), int | float):
            args = {**args, "session_id": str(args["session_id"])}
        if isinstance(args, dict) and args.get("action") not in (None, *ACTIONS):
            return args  # answered with hermes-agent's unknown-action message, not an argument error
        return super().validate(args)

    async def call(self, args: dict[str, Any], ctx: ToolCallContext) -> dict[str, Any]:
        registry = ProcessRegistry.of(ctx)
        action = args.get("action", "")
        session_id = str(args.get("session_id") or "")
        if action == "list":
            return {"processes": await registry.list(ctx)}
        if action not in (*ACTIONS, *EXTRA_ACTIONS):
            return {"error": f"Unknown process action: {action}. Use: {', '.join(ACTIONS)}"}
        if not session_id:
            return {"error": f"session_id is required for {action}"}
        if action == "poll":
            return await registry.poll(ctx, session_id)
        if action == "log":
            return await registry.read_log(ctx, session_id, max(0, args.get("offset", 0)), args.get("limit", 200))
        if action == "wait":
            return await registry.wait(ctx, session_id, args.get("timeout"))
        if action == "kill":
            return await registry.kill(ctx, session_id)
        if action == "close":
            return await registry.close(ctx, session_id)
        data = str(args.get("data", ""))
        return await registry.write(ctx, session_id, data + ("\n" if action == "submit" else ""))
