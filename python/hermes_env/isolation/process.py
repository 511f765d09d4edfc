"""Running one limited command: its own session, a wall-clock timeout, bounded output, nothing left behind.

stdout and stderr share one pipe, so the output keeps the order it was written in. At most
``max_output_bytes`` are kept; a command that writes past ``kill_output_bytes`` is stopped (an
endless ``yes`` should not spin until its timeout). When the command's main process exits,
whatever it left in its process group is killed: background jobs do not outlive their call.
Inside bubblewrap the PID namespace ends with the command, taking every descendant with it.

Stopping a command (timeout, output flood, cancellation, cleanup) goes through :func:`stop_tree`,
which freezes the tree before killing it; see there for why. :func:`run_sandboxed` is the whole
assembly every backend uses: ``prlimit`` rlimits, then the bubblewrap sandbox, then :func:`run_limited`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from hermes_env.isolation.bubblewrap import BwrapSpec, with_seccomp_fd
from hermes_env.isolation.limits import ResourceLimits
from hermes_env.isolation.reaper import spawn_guard
from hermes_env.isolation.result import ExecResult
from hermes_env.isolation.users import SandboxUser
from hermes_env.timeouts import DRAIN_GRACE_S

_READ_CHUNK = 65536
# After the main process exits (or is killed), how long to wait for the pipe to reach EOF.
_DRAIN_GRACE_S = DRAIN_GRACE_S  # hermes_env.timeouts: the limits under one tool call
TIMEOUT_EXIT_CODE = 124  # as timeout(1)


async def spawn(*argv: str, user: SandboxUser | None = None, **kwargs: Any) -> asyncio.subprocess.Process:
    """``asyncio.create_subprocess_exec`` in a new session (its own process group), as ``user``.

    A bwrap command line gets its seccomp filter's descriptor here (:func:`bubblewrap.with_seccomp_fd`); the
    process is registered with the reaper (``hermes_env.isolation.reaper``) as one whose status is ours.
    """
    kwargs["start_new_session"] = True
    if user is not None:
        argv = (*user.argv_prefix(), *argv)
    with spawn_guard() as own, with_seccomp_fd(argv) as (resolved, fds):
        pass_fds = (*kwargs.pop("pass_fds", ()), *fds)
        start = asyncio.ensure_future(asyncio.create_subprocess_exec(*resolved, pass_fds=pass_fds, **kwargs))
        try:
            proc = await asyncio.shield(start)
        except asyncio.CancelledError:
            # asyncio's own cancel path kills only the direct child, and a shell's children would outlive it:
            # the start runs to its end, then the whole tree is stopped.
            await _stop_started(start)
            raise
        own(proc)
    return proc


async def _stop_started(start: asyncio.Future[asyncio.subprocess.Process]) -> None:
    while not start.done():
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(start)
    if start.cancelled() or start.exception() is not None:
        return
    proc = start.result()
    await asyncio.shield(stop_tree(proc.pid))
    await asyncio.shield(proc.wait())


# -- stopping a process tree ------------------------------------------------------------------
def _state(pid: int) -> bytes | None:
    """The process's state letter (``R``, ``S``, ``T``, ``Z`` ...), None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def command_line(pid: int) -> list[str]:
    """``pid``'s argv as /proc shows it; empty when it is gone (or a kernel thread)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            raw = f.read()
    except OSError:
        return []
    return [part.decode("utf-8", "replace") for part in raw.split(b"\0")[:-1]] if raw else []


def children(pid: int) -> list[int]:
    """Direct children of ``pid`` (all its threads')."""
    out: list[int] = []
    with contextlib.suppress(OSError):
        for tid in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(c) for c in f.read().split()]
    return out


def pids_working_in(directory: str | os.PathLike[str]) -> list[int]:
    """Live processes whose working directory is ``directory`` or below it, deleted since or not.

    What a run's directory finds once the run is over is a process the run started and lost track of.
    """
    top = os.path.realpath(directory)
    found: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cwd = os.readlink(f"/proc/{entry}/cwd")
        except OSError:
            continue
        cwd = cwd.removesuffix(" (deleted)")
        if (cwd == top or cwd.startswith(top + "/")) and _state(int(entry)) not in (None, b"Z"):
            found.append(int(entry))
    return found


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def kill_group(pgid: int) -> None:
    """SIGKILL a process group; a group that is already gone is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _stop_tree_steps(pid: int, settle_s: float) -> Iterator[None]:
    """:func:`stop_tree`'s work; yields whenever it waits for processes to stop."""
    frozen: list[int] = []
    level = [pid]
    deadline = time.monotonic() + settle_s
    while level:
        for p in level:
            _signal(p, signal.SIGSTOP)
        frozen += level
        pending = set(level)
        while pending and time.monotonic() < deadline:
            pending = {p for p in pending if _state(p) not in (None, b"T", b"t", b"Z", b"X")}
            if pending:
                yield
        seen = set(frozen)
        level = [c for p in level for c in children(p) if c not in seen]
    for p in frozen:
        _signal(p, signal.SIGKILL)
    kill_group(pid)


async def stop_tree(pid: int, *, settle_s: float = 2.0) -> None:
    """SIGKILL ``pid``, its process group and every descendant, leaving none a moment to escape.

    The tree is frozen (SIGSTOP) level by level before anything is killed: a stopped process cannot
    fork, so once a level is seen stopped its children are all known. Killing without freezing
    leaks sandboxes: bwrap's monitor clones the sandbox's first process, which asks to die with
    its parent (``PR_SET_PDEATHSIG``) only after setting up the mounts; a monitor killed inside that
    window (a timeout or cleanup soon after the start) left the sandbox running, reparented to
    init, its workspace deleted under it, and, being its PID namespace's init, deaf to SIGTERM.
    Killing the namespace's first process takes the whole namespace down.
    """
    for _ in _stop_tree_steps(pid, settle_s):
        await asyncio.sleep(0.001)


# -- the runner -------------------------------------------------------------------------------
def truncation_note(kept: int, total: int) -> str:
    return f"\n[output truncated: showing the first {kept} of {total} bytes]"


async def run_limited(
    argv: Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str],
    timeout: float,
    max_output_bytes: int,
    kill_output_bytes: int,
    stdin: str | bytes | None = None,
    user: SandboxUser | None = None,
    running: set[int] | None = None,
) -> ExecResult:
    """Run ``argv`` (already wrapped in its sandbox and rlimits) and return its merged output.

    Never raises for failures of the command itself. ``running`` (optional) holds the process's pid
    while it runs, so that an owner can :func:`stop_tree` it from elsewhere (cleanup).
    """
    if timeout <= 0:
        return ExecResult.failure("bad_arguments", f"timeout must be positive, got {timeout}")
    # Our own pipe rather than asyncio's: asyncio's Process.wait() also waits for the pipes to
    # close, so a background job holding stdout would make a finished command look hung.
    read_fd, write_fd = os.pipe()
    try:
        proc = await spawn(
            *argv,
            user=user,
            cwd=cwd,
            env=dict(env),
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=write_fd,
            stderr=write_fd,
        )
    except BaseException as exc:
        # Cancelled (a dropped group) as much as failed: the read end is ours until a transport owns it.
        os.close(read_fd)
        if isinstance(exc, OSError):
            return ExecResult.failure("internal", f"could not start {argv[0]!r}: {exc}")
        raise
    finally:
        os.close(write_fd)

    loop = asyncio.get_running_loop()
    stream = asyncio.StreamReader(limit=_READ_CHUNK * 4)
    try:
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(stream), os.fdopen(read_fd, "rb", buffering=0)
        )
    except BaseException:
        # The command runs already: it must not outlive a call that never read it.
        await asyncio.shield(stop_tree(proc.pid))
        raise
    if running is not None:
        running.add(proc.pid)
    kept = bytearray()
    total = 0
    stopping: asyncio.Future[None] | None = None  # the output flood stopping the command

    async def pump() -> None:
        nonlocal total, stopping
        while True:
            chunk = await stream.read(_READ_CHUNK)
            if not chunk:
                return
            total += len(chunk)
            room = max_output_bytes - len(kept)
            if room > 0:
                kept.extend(chunk[:room])
            if total > kill_output_bytes and stopping is None:
                stopping = asyncio.ensure_future(stop_tree(proc.pid))

    async def feed() -> None:
        if stdin is None or proc.stdin is None:
            return
        data = stdin.encode() if isinstance(stdin, str) else stdin
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            proc.stdin.write(data)
            await proc.stdin.drain()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError, OSError):
            proc.stdin.close()

    reader = asyncio.create_task(pump())
    writer = asyncio.create_task(feed())
    timed_out = False
    try:
        try:
            await asyncio.wait_for(proc.wait(), timeout)
        except TimeoutError:
            timed_out = True
            await stop_tree(proc.pid)
            await proc.wait()
        if stopping is not None:
            await stopping
        # Background jobs left in the group die with the call (and release the pipe).
        kill_group(proc.pid)
        try:
            await asyncio.wait_for(asyncio.shield(reader), timeout=_DRAIN_GRACE_S)
        except TimeoutError:
            # Something that escaped the group (setsid) still holds the pipe: stop reading.
            reader.cancel()
        writer.cancel()
    except asyncio.CancelledError:
        await asyncio.shield(stop_tree(proc.pid))
        reader.cancel()
        writer.cancel()
        raise
    finally:
        if running is not None:
            running.discard(proc.pid)
        transport.close()
        for task in (reader, writer):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    output = kept.decode("utf-8", errors="replace")
    truncated = total > len(kept)
    if truncated:
        output += truncation_note(len(kept), total)
    code = proc.returncode if proc.returncode is not None else -signal.SIGKILL
    if stopping is not None and not timed_out:
        output += f"\n[command stopped: it wrote more than {kill_output_bytes} bytes of output]"
    if timed_out:
        output += f"\n[timed out after {timeout:g}s; the command and its child processes were killed]"
        code = TIMEOUT_EXIT_CODE
    return ExecResult(output=output, exit_code=code, timed_out=timed_out, truncated=truncated)


def sandboxed_argv(
    limits: ResourceLimits, command: Sequence[str], spec: BwrapSpec | None, *, nproc_offset: int = 0
) -> list[str]:
    """``command`` under ``limits``' rlimits (``prlimit``), inside ``spec``'s bubblewrap sandbox (none: unsandboxed).

    ``nproc_offset``: processes the command's user already runs (see ``ResourceLimits.prlimit_argv``).
    """
    prefix = limits.prlimit_argv(nproc_offset=nproc_offset)
    return prefix + (spec.argv(command) if spec is not None else list(command))


async def run_sandboxed(
    command: Sequence[str],
    *,
    limits: ResourceLimits,
    spec: BwrapSpec | None,
    cwd: str,
    env: Mapping[str, str],
    timeout: float,
    stdin: str | bytes | None = None,
    user: SandboxUser | None = None,
    nproc_offset: int = 0,
    running: set[int] | None = None,
) -> ExecResult:
    """:func:`run_limited` of :func:`sandboxed_argv`, its output bounded by ``limits``."""
    return await run_limited(
        sandboxed_argv(limits, command, spec, nproc_offset=nproc_offset),
        cwd=cwd,
        env=env,
        timeout=timeout,
        stdin=stdin,
        max_output_bytes=int(limits.max_output_bytes),
        kill_output_bytes=int(limits.kill_output_bytes),
        user=user,
        running=running,
    )
