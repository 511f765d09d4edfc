"""Finding, killing and waiting for processes to be gone, seen from the host's /proc (for the kill and fault tests)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
from pathlib import Path


async def wait_gone(pid: int) -> None:
    """Waits up to 5 s for ``pid`` to exit (a zombie counts as gone); AssertionError if it does not."""
    for _ in range(100):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        if _is_zombie(pid):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"process {pid} still alive after the timeout kill")


def _is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")
    except OSError:
        return True


def pids_with_cmdline(needle: str) -> list[int]:
    """The live processes but this one (zombies count as gone) whose command line holds ``needle``.

    The command line is read with its arguments joined by spaces, so ``"sleep 40"`` finds both ``bash -c
    'sleep 40'`` and an exec'd ``sleep 40``.
    """
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if needle in cmd and not _is_zombie(int(entry.name)):
            found.append(int(entry.name))
    return found


def pids_with_open_file(needle: str) -> list[int]:
    """The live processes but this one that hold a file descriptor whose target's path holds ``needle``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            if any(needle in os.readlink(fd) for fd in (entry / "fd").iterdir()) and not _is_zombie(int(entry.name)):
                found.append(int(entry.name))
    return found


def processes_of_uid(uid: int) -> list[str]:
    """``/proc/PID/stat`` of every process whose owner is ``uid``, zombies included (they count against its
    RLIMIT_NPROC until reaped)."""
    found = []
    for entry in os.scandir("/proc"):
        try:
            if entry.name.isdigit() and entry.stat().st_uid == uid:
                found.append(Path(entry.path, "stat").read_text())
        except OSError:
            continue
    return found


async def wait_no_process_with_cmdline(needle: str, limit_s: float = 5.0) -> None:
    """Waits up to ``limit_s`` until no live host process has ``needle`` in its command line."""
    for _ in range(round(limit_s / 0.05)):
        alive = pids_with_cmdline(needle)
        if not alive:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"processes running {needle!r} survived: {alive}")


def unique_sleep() -> str:
    """A ``sleep`` command line no other process on this shared host has (300 s and a random fraction)."""
    return f"sleep 300.{secrets.randbelow(10**9):09d}"


def kill_processes_with_cmdline(needle: str) -> None:
    """SIGKILL the live processes whose command line holds ``needle`` (a test's unique marker), by pid."""
    for pid in pids_with_cmdline(needle):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
