"""Waiting for processes to be gone, seen from the host's /proc (for the backends' kill tests)."""

from __future__ import annotations

import asyncio
import os
import secrets
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


async def wait_no_process_with_cmdline(needle: str) -> None:
    """Waits up to 5 s until no live host process has ``needle`` in its command line."""
    for _ in range(100):
        alive = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                except OSError:
                    continue
                if needle in cmd and not _is_zombie(int(entry.name)):
                    alive.append(entry.name)
        if not alive:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"processes running {needle!r} survived: {alive}")


def unique_sleep() -> str:
    """A ``sleep`` command line no other process on this shared host has (300 s and a random fraction)."""
    return f"sleep 300.{secrets.randbelow(10**9):09d}"


def kill_processes_with_cmdline(needle: str) -> None:
    """SIGKILL the live processes whose command line holds ``needle`` (a test's unique marker), by pid."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if needle in cmd:
                try:
                    os.kill(int(entry.name), 9)
                except (ProcessLookupError, PermissionError):
                    pass
