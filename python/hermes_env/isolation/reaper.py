"""Reaping what sandboxes leave behind, without taking an exit status anyone else waits for.

A sandbox's bwrap monitor can die before the sandbox does (a SIGKILLed worker, a stop in the middle of
its setup); the sandbox's first process and, once it dies, its whole PID namespace are then orphans.
The kernel hands orphans to the nearest ancestor that is a child subreaper, else to init: to the host's
init, or to nobody that reaps them where the environment itself is PID 1 of a container. So the
processes that start sandboxes (the ``bwrap`` backend's, each slot-pool worker, the pool's owner) call
:func:`start`: they become subreapers, and a thread takes their orphans every :data:`INTERVAL_S`.

Which zombie children are taken (:func:`reap_orphans`), and why that never steals a status:
- one in a PID namespace below ours: only bwrap creates those, and a sandbox's processes are
  children of its monitor, never of this process, until orphaned;
- one running as a sandbox task uid (``hermes_env.isolation.users``) that :func:`spawn_guard` did
  not register: every process this package starts as a task user goes through
  ``hermes_env.isolation.process.spawn``, which registers it, so an unregistered one is the
  orphaned monitor of a dead worker. While a start is in progress (between fork and registration)
  only such zombies older than :data:`SPAWN_GRACE_S` are taken.
- one whose program is a container engine's daemon (:data:`ENGINE_DAEMONS`: podman's ``conmon``, its
  network helpers): these daemonize (fork twice), so they are never anyone's direct child, and reach
  this process only as orphans, when it runs ``podman`` while being a subreaper.
Any other zombie child is left to whoever started it (asyncio's child watcher, ``subprocess``): each
waits for its own pid, so ``waitpid`` is only ever called here on a pid chosen by these rules (never
``-1``), and no SIGCHLD handler is installed (it would race with the child watcher).

A *live* child in a nested PID namespace is a sandbox whose monitor is gone (bwrap's ``--die-with-parent``
means it should be dead): it is killed, closing the window in which a monitor killed during the
sandbox's setup left it running.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Protocol

from hermes_env.isolation.users import MAX_UID_BLOCKS, SLOT_UID_BASE, UID_BLOCK

log = logging.getLogger(__name__)

_PR_SET_CHILD_SUBREAPER = 36
INTERVAL_S = 0.5
SPAWN_GRACE_S = 30.0  # a child unregistered for this long cannot be a start still in progress
_TASK_UIDS = range(SLOT_UID_BASE, SLOT_UID_BASE + MAX_UID_BLOCKS * UID_BLOCK)
#: Programs (their ``comm``) that only ever become our children by being orphaned: see the module.
ENGINE_DAEMONS = frozenset({b"conmon", b"aardvark-dns", b"slirp4netns", b"pasta", b"rootlessport"})


class _Child(Protocol):
    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | None: ...


# Children started through spawn_guard: their statuses belong to whoever started them.
_OWNED: dict[int, _Child] = {}
_STARTING = 0
_lock = threading.Lock()
_thread: threading.Thread | None = None
_thread_pid = 0  # the process the thread runs in (a forked child has none)


@contextlib.contextmanager
def spawn_guard() -> Iterator[Callable[[_Child], None]]:
    """Wrap the start of a child: ``with spawn_guard() as own: proc = start(); own(proc)``.

    The reaper leaves ``proc`` alone, and while the block runs it takes no young zombie it cannot place.
    """
    global _STARTING
    with _lock:
        _STARTING += 1
    try:
        yield lambda proc: _OWNED.__setitem__(proc.pid, proc)
    finally:
        with _lock:
            _STARTING -= 1


def become_subreaper() -> bool:
    """Make orphaned descendants reparent to this process rather than to init (True when it worked)."""
    if os.getpid() == 1:
        return True  # init already receives every orphan
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _children() -> list[int]:
    out: list[int] = []
    with contextlib.suppress(OSError):
        for tid in os.listdir("/proc/self/task"):
            with contextlib.suppress(OSError), open(f"/proc/self/task/{tid}/children") as f:
                out += [int(c) for c in f.read().split()]
    return out


def _status(pid: int) -> tuple[bytes, bytes, int, int, float] | None:
    """(program name, state, real uid, PID-namespace depth, seconds since it started) of ``pid``; None when it
    is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            head, tail = f.read().rsplit(b")", 1)
        comm, fields = head.split(b"(", 1)[1], tail.split()
        with open(f"/proc/{pid}/status", "rb") as f:
            status = f.read()
        with open("/proc/uptime", "rb") as f:
            uptime = float(f.read().split()[0])
    except (OSError, IndexError, ValueError):
        return None
    uid, depth = -1, 1
    for line in status.split(b"\n"):
        if line.startswith(b"Uid:"):
            uid = int(line.split()[1])
        elif line.startswith(b"NSpid:"):
            depth = len(line.split()) - 1
    return comm, fields[0], uid, depth, uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK")


@functools.lru_cache(maxsize=1)
def _own_depth() -> int:
    status = _status(os.getpid())
    return status[3] if status is not None else 1


def reap_orphans() -> int:
    """One pass: reap the zombie children that are orphans (see the module), kill live orphaned sandboxes.

    Returns how many zombies were reaped.
    """
    for pid in [pid for pid, proc in list(_OWNED.items()) if proc.returncode is not None]:
        _OWNED.pop(pid, None)
    reaped = 0
    for pid in _children():
        if pid in _OWNED:
            continue
        status = _status(pid)
        if status is None:
            continue
        comm, state, uid, depth, age = status
        nested = depth > _own_depth()
        if state != b"Z":
            if nested:  # a sandbox whose monitor died: it should have died with it
                log.warning("killing sandbox process %d: its bubblewrap monitor is gone", pid)
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            continue
        if not nested and comm not in ENGINE_DAEMONS:
            if uid not in _TASK_UIDS or (_STARTING and age < SPAWN_GRACE_S):
                continue
        with contextlib.suppress(ChildProcessError):
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                reaped += 1
    return reaped


def _loop() -> None:
    while True:
        try:
            reap_orphans()
        except Exception:  # the reaper must outlive any odd /proc state
            log.exception("reaping orphaned sandbox processes failed")
        time.sleep(INTERVAL_S)


def start() -> bool:
    """Make this process the subreaper of what it starts and run the reaper thread (once per process).

    Returns whether this process is now a subreaper (or init).
    """
    global _thread, _thread_pid
    ok = become_subreaper()
    with _lock:
        if _thread is None or _thread_pid != os.getpid() or not _thread.is_alive():
            _thread = threading.Thread(target=_loop, name="hermes-sandbox-reaper", daemon=True)
            _thread_pid = os.getpid()
            _thread.start()
    return ok
