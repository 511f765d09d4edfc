"""Worker handles: one sandbox server each, started as a local process (here) or a Ray actor.

A launcher turns ``(index, slots, policy)`` into a started :class:`WorkerHandle`; the pool
only talks to handles, so adding a cluster engine means adding a launcher.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import json
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

import hermes_env
from hermes_env.sandbox.config import SandboxPolicy
from hermes_env.sandbox.isolation import SLOT_UID_BASE


class WorkerStartError(RuntimeError):
    """A sandbox server could not be started (the message says why and what to do)."""


@dataclass(frozen=True, slots=True)
class WorkerSpec:
    index: int
    slots: int
    policy: SandboxPolicy
    root: Path
    start_timeout_s: float
    secret: str | None = None  # shared with the pool; the server refuses requests without it
    uid_base: int = SLOT_UID_BASE  # the pool's uid block (see isolation.UidBlock)


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


class WorkerLauncher(abc.ABC):
    @abc.abstractmethod
    def create(self, spec: WorkerSpec) -> WorkerHandle: ...

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release launcher-wide resources (e.g. a Ray connection)."""


def server_command(spec: WorkerSpec, worker_id: str, parent_pid: int, python: str = sys.executable) -> list[str]:
    return [
        python,
        "-m",
        "hermes_env.sandbox.server",
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
    pkg_parent = str(Path(hermes_env.__file__).resolve().parent.parent)
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


class LocalWorker(WorkerHandle):
    """A sandbox server as a child process of this one."""

    def __init__(self, spec: WorkerSpec) -> None:
        super().__init__(spec)
        self._proc: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        self.spec.root.mkdir(parents=True, exist_ok=True)
        log_path = self.spec.root / "server.log"
        with log_path.open("ab") as log_file:
            self._proc = await asyncio.create_subprocess_exec(
                *server_command(self.spec, self.worker_id, os.getpid()),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=log_file,
                env=server_env(self.spec),
                start_new_session=True,  # a Ctrl-C in the driver's terminal is handled by the pool
            )
        self.pid = self._proc.pid
        assert self._proc.stdout is not None
        try:
            line = await asyncio.wait_for(self._proc.stdout.readline(), self.spec.start_timeout_s)
        except TimeoutError as exc:
            await self.kill()
            raise WorkerStartError(
                f"sandbox server {self.worker_id} was not ready within {self.spec.start_timeout_s:g}s; see {log_path}"
            ) from exc
        try:
            port = parse_ready_line(line, self.worker_id, log_path)
        except WorkerStartError:
            await self.kill()
            raise
        self.url = f"http://127.0.0.1:{port}"
        self.node_id = "local"

    def process_alive(self) -> bool:
        return self._proc is not None and self._proc.returncode is None

    async def stop(self) -> None:
        if self._proc is None or self._proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            self._proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(self._proc.wait(), 10.0)
        except TimeoutError:
            await self.kill()

    async def kill(self) -> None:
        if self._proc is None or self._proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            self._proc.kill()
        await self._proc.wait()


class LocalLauncher(WorkerLauncher):
    def create(self, spec: WorkerSpec) -> WorkerHandle:
        return LocalWorker(spec)
