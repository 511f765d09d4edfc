"""Running one command as a child process group with a timeout and bounded output.

Shared by the ``local`` and ``bwrap`` backends. Each command gets its own session (so its
process group can be killed as a whole); stdout and stderr are merged in the order they were
written; at most ``max_output_bytes`` are kept, and a command that keeps writing past
``kill_output_bytes`` is killed (an endless ``yes`` should not spin until its timeout).
When the command's main process exits, whatever it left running in its group is killed too:
background jobs do not outlive the call that started them.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Mapping, Sequence

from hermes_env.backends.base import ExecResult

_READ_CHUNK = 65536
# After the main process exits (or is killed), how long to wait for the pipe to reach EOF.
_DRAIN_GRACE_S = 2.0


def kill_group(pgid: int) -> None:
    """SIGKILL a process group; a group that is already gone is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def truncation_note(kept: int, total: int) -> str:
    return f"\n[output truncated: showing the first {kept} of {total} bytes]"


async def run_process(
    argv: Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str],
    timeout: float,
    stdin: str | None = None,
    max_output_bytes: int = 256 * 1024,
    kill_output_bytes: int = 32 * 1024 * 1024,
    running: set[int] | None = None,
) -> ExecResult:
    """Run ``argv`` and return its merged output; never raises for failures of the command itself.

    ``running`` (optional) receives the process group id while the command runs, so a backend
    can kill it from ``cleanup``.
    """
    if timeout <= 0:
        return ExecResult(output="", exit_code=-1, error=f"timeout must be positive, got {timeout}")
    # Our own pipe rather than asyncio's: asyncio's Process.wait() also waits for the pipes to
    # close, so a background job holding stdout would make a finished command look hung.
    read_fd, write_fd = os.pipe()
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            env=dict(env),
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=write_fd,
            stderr=write_fd,
            start_new_session=True,
        )
    except OSError as exc:
        os.close(read_fd)
        return ExecResult(output="", exit_code=-1, error=f"could not start {argv[0]!r}: {exc}")
    finally:
        os.close(write_fd)

    loop = asyncio.get_running_loop()
    stream = asyncio.StreamReader(limit=_READ_CHUNK * 4)
    transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(stream), os.fdopen(read_fd, "rb", buffering=0)
    )
    pgid = proc.pid
    if running is not None:
        running.add(pgid)
    kept = bytearray()
    total = 0
    flooded = False

    async def pump() -> None:
        nonlocal total, flooded
        while True:
            chunk = await stream.read(_READ_CHUNK)
            if not chunk:
                return
            total += len(chunk)
            room = max_output_bytes - len(kept)
            if room > 0:
                kept.extend(chunk[:room])
            if total > kill_output_bytes and not flooded:
                flooded = True
                kill_group(pgid)

    async def feed() -> None:
        if stdin is None or proc.stdin is None:
            return
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            proc.stdin.write(stdin.encode())
            await proc.stdin.drain()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError, OSError):
            proc.stdin.close()

    reader = asyncio.create_task(pump())
    writer = asyncio.create_task(feed())
    timed_out = False
    try:
        try:
            await asyncio.wait_for(proc.wait(), timeout=timeout)
        except TimeoutError:
            timed_out = True
            kill_group(pgid)
            await proc.wait()
        # Background jobs left in the group die with the call (and release the pipe).
        kill_group(pgid)
        try:
            await asyncio.wait_for(asyncio.shield(reader), timeout=_DRAIN_GRACE_S)
        except TimeoutError:
            # Something that escaped the group (setsid) still holds the pipe: stop reading.
            reader.cancel()
        writer.cancel()
    except asyncio.CancelledError:
        kill_group(pgid)
        reader.cancel()
        writer.cancel()
        raise
    finally:
        if running is not None:
            running.discard(pgid)
        transport.close()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await reader
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await writer

    output = kept.decode("utf-8", errors="replace")
    truncated = total > len(kept)
    if truncated:
        output += truncation_note(len(kept), total)
        if flooded:
            output += f"\n[command killed: it wrote more than {kill_output_bytes} bytes of output]"
    code = proc.returncode if proc.returncode is not None else -1
    if timed_out:
        output += f"\n[timed out after {timeout:g}s; the command and its child processes were killed]"
        code = code if code != 0 else -9
    return ExecResult(output=output, exit_code=code, timed_out=timed_out, truncated=truncated)
