"""Finding, killing and waiting for processes to be gone, seen from the host's /proc (for the kill and fault tests)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any


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
    raise AssertionError(f"process {pid} still alive 5 s after it should have been killed")


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


def pids_running(*argv: str) -> list[int]:
    """The live processes whose command line is exactly ``argv`` (the program itself, not a shell or sandbox
    whose arguments mention it)."""
    want = "\0".join(argv).encode() + b"\0"
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if (entry / "cmdline").read_bytes() == want and not _is_zombie(int(entry.name)):
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


async def _wait_none_left(find: Callable[[], list[Any]], limit_s: float, what: str) -> None:
    """Waits up to ``limit_s`` until ``find()`` comes back empty; AssertionError naming ``what`` and the rest if not."""
    for _ in range(round(limit_s / 0.05)):
        left = find()
        if not left:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{what} after {limit_s:g}s: {left}")


async def wait_uid_has_no_process(uid: int, limit_s: float = 30.0) -> None:
    """Waits until ``uid`` owns no process, zombies included.

    A sandbox killed whole (a fork bomb's cleanup, a timeout) leaves its processes orphaned to the
    host's init, which reaps them in its own time; a later test on the same uid waits for that.
    """
    await _wait_none_left(lambda: processes_of_uid(uid), limit_s, f"uid {uid} still owns processes")


async def wait_no_process_with_cmdline(needle: str, limit_s: float = 5.0) -> None:
    """Waits until no live host process has ``needle`` in its command line."""
    await _wait_none_left(lambda: pids_with_cmdline(needle), limit_s, f"processes running {needle!r} survived")


async def wait_no_process_holding(needle: str, limit_s: float = 5.0) -> None:
    """Waits until no live host process holds a file whose path has ``needle`` in it."""
    await _wait_none_left(lambda: pids_with_open_file(needle), limit_s, f"processes still hold {needle!r}")


def unique_sleep() -> str:
    """A ``sleep`` command line no other process on this shared host has (300 s and a random fraction)."""
    return f"sleep 300.{secrets.randbelow(10**9):09d}"


def kill_processes_with_cmdline(needle: str) -> None:
    """SIGKILL the live processes whose command line holds ``needle`` (a test's unique marker), by pid."""
    for pid in pids_with_cmdline(needle):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
