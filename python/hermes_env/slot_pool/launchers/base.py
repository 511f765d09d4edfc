"""Launchers start sandbox workers; a :class:`WorkerHandle` is one running worker (one sandbox server).

A launcher turns a :class:`WorkerSpec` (index, slots, policy) into a started handle; the pool only
talks to handles, so running workers somewhere new (a cluster engine, containers) means adding a
launcher and naming it in ``hermes_env.slot_pool.config.LAUNCHERS``.
"""

from __future__ import annotations

import abc
import contextlib
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from hermes_env.errors import WorkerStartError
from hermes_env.isolation.users import SLOT_UID_BASE, kill_uids, task_user
from hermes_env.resources import package_parent
from hermes_env.slot_pool.config import SandboxPolicy

__all__ = [
    "SECRET_ENV",
    "SECRET_HEADER",
    "WorkerHandle",
    "WorkerLauncher",
    "WorkerSpec",
    "parse_ready_line",
    "server_command",
    "server_env",
]


@dataclass(frozen=True, slots=True)
class WorkerSpec:
    index: int
    slots: int
    policy: SandboxPolicy
    root: Path
    start_timeout_s: float
    secret: str | None = None  # shared with the pool; the server refuses requests without it
    uid_base: int = SLOT_UID_BASE  # the pool's uid block (see hermes_env.isolation.users.UidBlock)


class WorkerHandle(abc.ABC):
    """A running sandbox server reachable at ``url``."""

    def __init__(self, spec: WorkerSpec) -> None:
        self.spec = spec
        self.worker_id = f"w{spec.index}"
        self.url = ""
        self.node_id: str | None = None
        self.pid: int | None = None

    @abc.abstractmethod
    async def start(self) -> None: ...

    @abc.abstractmethod
    def process_alive(self) -> bool:
        """Cheap liveness (no I/O); the pool adds an HTTP health check on top."""

    @abc.abstractmethod
    async def stop(self) -> None:
        """Graceful stop (SIGTERM, then SIGKILL)."""

    @abc.abstractmethod
    async def kill(self) -> None:
        """Immediate stop, used for workers that stopped answering."""


def kill_worker_uids(spec: WorkerSpec) -> None:
    """Kill what runs under the worker's slot uids: after the worker itself was killed, a sandbox it was
    starting may have missed its parent-death signal. Only as root, where each slot has a uid of its own."""
    if os.geteuid() == 0:
        kill_uids(task_user(spec.uid_base, spec.index * spec.slots + i).uid or 0 for i in range(spec.slots))


class WorkerLauncher(abc.ABC):
    """Starts workers; constructed with the pool's ``PoolConfig`` (``launchers.create_launcher``)."""

    @abc.abstractmethod
    def create(self, spec: WorkerSpec) -> WorkerHandle: ...

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release launcher-wide resources (e.g. a Ray connection)."""


def server_command(spec: WorkerSpec, worker_id: str, parent_pid: int, python: str = sys.executable) -> list[str]:
    return [
        python,
        "-m",
        "hermes_env.slot_pool.server",
        "--slots",
        str(spec.slots),
        "--root",
        str(spec.root),
        "--policy",
        spec.policy.model_dump_json(),
        "--worker-index",
        str(spec.index),
        "--worker-id",
        worker_id,
        "--uid-base",
        str(spec.uid_base),
        "--parent-pid",
        str(parent_pid),
    ]


SECRET_ENV = "HERMES_SANDBOX_SECRET"
SECRET_HEADER = "X-Hermes-Sandbox-Secret"


def server_env(spec: WorkerSpec) -> dict[str, str]:
    """The environment for a server process: its secret, and this hermes_env importable even when not installed."""
    env = dict(os.environ)
    env.pop(SECRET_ENV, None)
    if spec.secret:
        env[SECRET_ENV] = spec.secret
    pkg_parent = str(package_parent())
    env["PYTHONPATH"] = pkg_parent + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def parse_ready_line(line: bytes, worker_id: str, log_path: Path) -> int:
    """The port from the server's first stdout line; WorkerStartError with its reason otherwise."""
    if not line:
        tail = ""
        with contextlib.suppress(OSError):
            tail = log_path.read_text(errors="replace")[-2000:]
        raise WorkerStartError(f"sandbox server {worker_id} exited before it was ready; its log ends with:\n{tail}")
    try:
        info = json.loads(line)
    except json.JSONDecodeError as exc:
        raise WorkerStartError(f"sandbox server {worker_id} printed {line[:200]!r} instead of its ready line") from exc
    if "error" in info:
        raise WorkerStartError(f"sandbox server {worker_id} refused to start: {info['error']}")
    return int(info["port"])
