"""The Unix users sandboxed commands run as: one uid per task (slot) when this process is root.

Process limits need a real unprivileged user: the kernel never applies RLIMIT_NPROC to root,
and tasks sharing a uid share one process count (one task's fork bomb starves the others) and
can signal each other's processes. So as root every task gets a uid of its own, its workspace
is owned by it with mode 0700, and ending the task kills every process of that uid, including
any that escaped its process group. As an ordinary user commands run as that user; isolation
between tasks then rests on the sandbox's namespaces alone.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import time
from collections.abc import Iterable
from dataclasses import dataclass

from hermes_env.errors import BackendUnavailableError

# First uid handed to tasks; far above normal login users (and below 2**31).
SLOT_UID_BASE = 200_000
UID_BLOCK = 8192  # tasks one pool or backend can run at once (uids wrap around within its block)
MAX_UID_BLOCKS = 4096
LOCK_DIR = "/tmp"


@dataclass(frozen=True, slots=True)
class SandboxUser:
    """The user a task's commands run as; ``uid is None`` means this process's own user."""

    uid: int | None = None
    gid: int | None = None

    @property
    def owner(self) -> tuple[int, int] | None:
        """``(uid, gid)`` files of the task are given to, or None when they stay ours."""
        return None if self.uid is None else (self.uid, self.gid if self.gid is not None else self.uid)

    def argv_prefix(self) -> list[str]:
        """A command-line prefix that runs the rest as this user (empty for our own user).

        ``setpriv`` rather than ``subprocess``'s ``user=``: with ``user=`` CPython cannot use vfork and
        forks the whole (possibly multi-GB) trainer process, ~37 ms per call at 600 MB against ~2.5 ms.
        """
        if self.uid is None:
            return []
        setpriv = system_tool("setpriv")
        if setpriv is None:
            raise BackendUnavailableError(
                "setpriv (util-linux) is not installed; it runs each task's commands as the task's own user"
            )
        gid = self.gid if self.gid is not None else self.uid
        return [setpriv, f"--reuid={self.uid}", f"--regid={gid}", "--clear-groups", "--"]


def system_tool(name: str) -> str | None:
    """A util-linux program (``setpriv``, ``prlimit``): from PATH, else from the system's own directories."""
    return shutil.which(name) or shutil.which(name, path="/usr/bin:/bin:/usr/sbin:/sbin")


def task_user(uid_base: int, index: int) -> SandboxUser:
    """The user of task slot ``index`` in the uid block starting at ``uid_base``; our own user when not root."""
    if os.geteuid() != 0:
        return SandboxUser()
    uid = uid_base + index % UID_BLOCK
    return SandboxUser(uid, uid)


def _lock_path(block: int) -> str:
    return os.path.join(LOCK_DIR, f"hermes-sandbox-uids-{block}.lock")


class UidBlock:
    """A range of ``UID_BLOCK`` task uids held by one pool or backend for its lifetime.

    Two runs on one host (two environments, a benchmark beside training) must never share a task
    uid: ending a task kills every process of its uid. A block is claimed with an exclusive
    ``flock`` on a lock file, which the kernel releases when the holder exits however it ends;
    whoever claims a block next first kills what the dead holder's tasks left running.
    """

    def __init__(self) -> None:
        self.block: int | None = None
        self.base = SLOT_UID_BASE
        self._fd: int | None = None
        if os.geteuid() != 0:
            return  # commands run as our own user; there is nothing to share
        for block in range(MAX_UID_BLOCKS):
            fd = _try_lock(_lock_path(block))
            if fd is None:
                continue
            self._fd, self.block = fd, block
            self.base = SLOT_UID_BASE + block * UID_BLOCK
            kill_uids(range(self.base, self.base + UID_BLOCK))  # leftovers of a holder that died
            return
        raise BackendUnavailableError(
            f"all {MAX_UID_BLOCKS} sandbox uid blocks are held by other runs on this host; stop some of them"
        )

    @property
    def distinct(self) -> bool:
        """Whether tasks get uids of their own (this process is root)."""
        return self._fd is not None

    def user(self, index: int) -> SandboxUser:
        """The user of task slot ``index`` (wrapping within the block); this process's user when not root."""
        return task_user(self.base, index) if self._fd is not None else SandboxUser()

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing drops the flock
            self._fd = None


def _try_lock(path: str) -> int | None:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def sweep_dead_uid_blocks() -> int:
    """Kill what runs under the uids of blocks no live run holds (their holders died); returns processes killed."""
    if os.geteuid() != 0:
        return 0
    killed = 0
    for name in os.listdir(LOCK_DIR):
        if not (name.startswith("hermes-sandbox-uids-") and name.endswith(".lock")):
            continue
        try:
            block = int(name[len("hermes-sandbox-uids-") : -len(".lock")])
        except ValueError:
            continue
        fd = _try_lock(_lock_path(block))
        if fd is None:
            continue  # held by a live run
        try:
            base = SLOT_UID_BASE + block * UID_BLOCK
            killed += kill_uids(range(base, base + UID_BLOCK))
        finally:
            os.close(fd)
    return killed


def _process_uids() -> dict[int, int]:
    """pid -> real uid of every live (not zombie) process, as the host sees it."""
    out: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/status", "rb") as f:
                status = f.read()
        except OSError:
            continue
        state = uid = None
        for line in status.split(b"\n"):
            if line.startswith(b"State:"):
                state = line.split()[1:2]
            elif line.startswith(b"Uid:"):
                uid = int(line.split()[1])
                break
        if uid is not None and state not in ([b"Z"], [b"X"]):  # zombies hold nothing; their parent reaps them
            out[int(entry.name)] = uid
    return out


def live_pids_of(uid: int) -> list[int]:
    """Live processes whose real uid is ``uid``."""
    return sorted(pid for pid, u in _process_uids().items() if u == uid)


def kill_uids(uids: Iterable[int], attempts: int = 50) -> int:
    """SIGKILL every live process of these uids until none is left; returns how many were signalled."""
    wanted = set(uids)
    killed = 0
    for _ in range(attempts):
        pids = [pid for pid, uid in _process_uids().items() if uid in wanted]
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                killed += 1
        time.sleep(0.02)
    return killed


def user_process_count() -> int:
    """Processes of this process's real uid (RLIMIT_NPROC counts them all when tasks share it)."""
    me = os.getuid()
    return sum(1 for uid in _process_uids().values() if uid == me)
