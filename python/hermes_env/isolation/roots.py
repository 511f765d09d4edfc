"""Run roots: the temporary directory a backend or pool keeps its workspaces in, cleaned up even after a crash.

A run that ends normally removes its root. One that is killed (SIGKILL, OOM, power loss) cannot,
so every root carries an owner lock: a file its creator holds ``flock``-ed for as long as it lives
(the kernel drops the lock when the process dies, however it dies). Each new run first sweeps the
roots whose lock nobody holds: it unmounts what is mounted under them (workspace quotas), removes
them, and kills what the dead runs' task uids left running (``users.sweep_dead_uid_blocks``).
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import tempfile
from pathlib import Path

from hermes_env.isolation import quota
from hermes_env.isolation.paths import force_rmtree
from hermes_env.isolation.users import sweep_dead_uid_blocks

log = logging.getLogger(__name__)

LOCK_NAME = ".hermes-owner.lock"
PREFIX = "hermes-"


class RunRoot:
    """A fresh directory ``<tmp>/hermes-<kind>-XXXX`` owned by this process until :meth:`remove`."""

    def __init__(self, kind: str, *, mode: int = 0o711, parent: str | None = None) -> None:
        self.path = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{kind}-", dir=parent))
        self.path.chmod(mode)  # task users must traverse it to reach their workspaces
        # Created locked under a temporary name, then renamed: a sweeper never sees the lock file unlocked.
        staging = self.path / f"{LOCK_NAME}.{os.getpid()}"
        self._fd: int | None = os.open(staging, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        os.write(self._fd, f"{os.getpid()}\n".encode())
        os.rename(staging, self.path / LOCK_NAME)

    def remove(self) -> None:
        """Unmount and delete the root, then let go of it (idempotent)."""
        if self._fd is None:
            return
        _remove(self.path)
        os.close(self._fd)
        self._fd = None


def _remove(path: Path) -> None:
    for mount in quota.mounts_under(path):
        with contextlib.suppress(OSError):
            quota.unmount(mount)
    force_rmtree(path)


def sweep_dead_roots(parent: str | None = None) -> list[Path]:
    """Remove the run roots under ``parent`` (the temp dir) whose owner died; returns what was removed."""
    base = Path(parent or tempfile.gettempdir())
    removed = []
    try:
        candidates = [p for p in base.iterdir() if p.name.startswith(PREFIX) and (p / LOCK_NAME).is_file()]
    except OSError:
        return []
    for root in candidates:
        try:
            fd = os.open(root / LOCK_NAME, os.O_RDWR | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue  # its owner is alive
        try:
            _remove(root)
            removed.append(root)
        except OSError as exc:
            log.warning("could not remove %s, left by a run that died: %s", root, exc)
        finally:
            os.close(fd)
    if removed:
        log.info("removed %d workspace root(s) left by runs that died: %s", len(removed), ", ".join(map(str, removed)))
    return removed


def sweep_dead_runs() -> None:
    """What a run does before it starts: remove dead runs' roots and stop what their task users left running."""
    sweep_dead_roots()
    sweep_dead_uid_blocks()
