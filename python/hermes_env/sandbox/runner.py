"""Running one process with a wall-clock timeout and a cap on the output kept.

The process is started in its own session so the whole tree can be killed at once; inside
bubblewrap the PID namespace dies with its init, taking every descendant with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal

from hermes_env.sandbox.isolation import SlotIdentity
from hermes_env.sandbox.protocol import ToolResult

# After the kept output is full, keep draining this many times the limit before giving up
# on the command (so "print a lot, then exit 0" still finishes, while `yes` is stopped).
_DRAIN_FACTOR = 16
_CHUNK = 65536


def kill_tree(proc: asyncio.subprocess.Process) -> None:
    """SIGKILL the process group led by ``proc`` (it was started with start_new_session)."""
    if proc.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()


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
        proc = await asyncio.create_subprocess_exec(
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
                kill_tree(proc)
                break
        await proc.wait()

    feeder = asyncio.ensure_future(feed()) if stdin is not None else None
    timed_out = False
    try:
        await asyncio.wait_for(pump(), timeout)
    except TimeoutError:
        timed_out = True
        kill_tree(proc)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), 5.0)
    except asyncio.CancelledError:
        kill_tree(proc)
        raise
    finally:
        if feeder is not None:
            feeder.cancel()
    if proc.returncode is None:
        kill_tree(proc)
        await proc.wait()

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
