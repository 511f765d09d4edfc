"""Running one process with a wall-clock timeout and a cap on the output kept.

The process is started in its own session so the whole tree can be killed at once; inside
bubblewrap the PID namespace dies with its pid 1, taking every descendant with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import signal
from typing import Any

from hermes_env.sandbox.isolation import SlotIdentity
from hermes_env.sandbox.protocol import ToolResult

# After the kept output is full, keep draining this many times the limit before giving up
# on the command (so "print a lot, then exit 0" still finishes, while `yes` is stopped).
_DRAIN_FACTOR = 16
_CHUNK = 65536

# Children this process started through asyncio (their statuses belong to asyncio's watcher);
# any other zombie child is an orphan reparented to us as subreaper, which ``reap_orphans`` collects.
_MANAGED: dict[int, asyncio.subprocess.Process] = {}
_PR_SET_CHILD_SUBREAPER = 36
_SPAWNING = 0  # spawns between fork and registration in _MANAGED
# A child unregistered for this long cannot be a spawn still in progress.
_SPAWN_GRACE_S = 30.0


async def spawn(*argv: str, **kwargs: Any) -> asyncio.subprocess.Process:
    """``asyncio.create_subprocess_exec`` in a new session, recorded as managed (see ``reap_orphans``)."""
    global _SPAWNING
    kwargs["start_new_session"] = True
    _SPAWNING += 1
    try:
        proc = await asyncio.create_subprocess_exec(*argv, **kwargs)
        _MANAGED[proc.pid] = proc
    finally:
        _SPAWNING -= 1
    return proc


def become_subreaper() -> bool:
    """Make orphaned descendants (a sandbox's pid 1 whose bwrap was killed) reparent to this process."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def reap_orphans() -> int:
    """waitpid every zombie child that is an orphan reparented to us; returns how many were reaped.

    A child we spawned belongs to asyncio's child watcher; between the fork and its registration
    in ``_MANAGED`` (``create_subprocess_exec`` is still connecting pipes) it is unknown to us,
    so while a spawn is in progress only zombies older than ``_SPAWN_GRACE_S`` are taken.
    """
    for pid in [pid for pid, proc in _MANAGED.items() if proc.returncode is not None]:
        _MANAGED.pop(pid, None)
    me = str(os.getpid())
    reaped = 0
    try:
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0
    ticks = os.sysconf("SC_CLK_TCK")
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) in _MANAGED:
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            state, ppid, started = fields[0], fields[1].decode(), int(fields[19]) / ticks
        except (OSError, IndexError, ValueError):
            continue
        if state != b"Z" or ppid != me:
            continue
        if _SPAWNING and uptime - started < _SPAWN_GRACE_S:
            continue  # might be a spawn not registered yet
        with contextlib.suppress(ChildProcessError):
            os.waitpid(int(entry.name), os.WNOHANG)
            reaped += 1
    return reaped


def _children(pid: int) -> list[int]:
    out: list[int] = []
    with contextlib.suppress(OSError):
        for tid in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(c) for c in f.read().split()]
    return out


def kill_tree(proc: asyncio.subprocess.Process) -> None:
    """SIGKILL the process group led by ``proc`` (it was started with start_new_session)."""
    if proc.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()


async def terminate(proc: asyncio.subprocess.Process, grace: float = 3.0) -> None:
    """Stop ``proc`` and everything under it, and wait for it.

    The namespace's pid 1 (bwrap's child: the command, run with ``--as-pid-1``) is killed first:
    the PID namespace dies with it, and bwrap reaps it and exits, so nothing is orphaned.
    Killing bwrap first would leave its child to be reparented, and a zombie nobody reaps still
    counts against the slot user's process limit. The output pipe is drained meanwhile: asyncio
    only reports a process as finished once its pipes are closed, and it stops reading when its
    buffer is full.
    """
    if proc.returncode is None:
        inner = _children(proc.pid)
        for pid in inner:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        if not inner:
            kill_tree(proc)

    async def drain_and_wait() -> None:
        if proc.stdout is not None:
            while await proc.stdout.read(_CHUNK):
                pass
        await proc.wait()

    try:
        await asyncio.wait_for(drain_and_wait(), grace)
    except TimeoutError:
        kill_tree(proc)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(drain_and_wait(), grace)


async def run_process(
    argv: list[str],
    *,
    cwd: str | None,
    identity: SlotIdentity,
    timeout: float,
    max_output: int,
    stdin: bytes | None = None,
) -> ToolResult:
    try:
        proc = await spawn(
            *argv,
            cwd=cwd,
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
            user=identity.uid,
            group=identity.gid,
            extra_groups=[] if identity.uid is not None else None,
        )
    except OSError as exc:
        return ToolResult.failure("internal", f"could not start the command: {exc}")

    kept = bytearray()
    dropped = 0
    stopped_for_output = False

    async def feed() -> None:
        assert proc.stdin is not None
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            proc.stdin.write(stdin or b"")
            await proc.stdin.drain()
        proc.stdin.close()

    async def pump() -> None:
        nonlocal dropped, stopped_for_output
        assert proc.stdout is not None
        while True:
            chunk = await proc.stdout.read(_CHUNK)
            if not chunk:
                break
            room = max_output - len(kept)
            if room > 0:
                kept.extend(chunk[:room])
            dropped += max(0, len(chunk) - max(room, 0))
            if dropped > _DRAIN_FACTOR * max_output:
                stopped_for_output = True
                return
        await proc.wait()

    feeder = asyncio.ensure_future(feed()) if stdin is not None else None
    timed_out = False
    try:
        await asyncio.wait_for(pump(), timeout)
    except TimeoutError:
        timed_out = True
    except asyncio.CancelledError:
        await asyncio.shield(terminate(proc))
        raise
    finally:
        if feeder is not None:
            feeder.cancel()
    if proc.returncode is None or stopped_for_output:
        await terminate(proc)

    output = kept.decode("utf-8", "replace")
    if dropped:
        note = f"\n[output truncated: {dropped} more bytes over the {max_output}-byte limit were dropped"
        note += "; the command was stopped]" if stopped_for_output else "]"
        output += note
    if timed_out:
        output += f"\n[command timed out after {timeout:g}s and was killed]"
    code = proc.returncode if proc.returncode is not None else -9
    return ToolResult(
        output=output, exit_code=code if not timed_out else 124, timed_out=timed_out, truncated=dropped > 0
    )
