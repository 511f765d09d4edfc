"""``local`` launcher: each sandbox server is a child process of this one."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal

from hermes_env.errors import WorkerStartError
from hermes_env.isolation.process import stop_tree
from hermes_env.slot_pool.config import PoolConfig
from hermes_env.slot_pool.launchers.base import (
    WorkerHandle,
    WorkerLauncher,
    WorkerSpec,
    kill_worker_uids,
    parse_ready_line,
    server_command,
    server_env,
)


class LocalWorker(WorkerHandle):
    """A sandbox server as a child process of this one, listening on ``host`` (a Ray actor passes its node's)."""

    def __init__(self, spec: WorkerSpec, host: str = "127.0.0.1") -> None:
        super().__init__(spec)
        self.host = host
        self._proc: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        self.spec.root.mkdir(parents=True, exist_ok=True)
        log_path = self.spec.root / "server.log"
        with log_path.open("ab") as log_file:
            self._proc = await asyncio.create_subprocess_exec(
                *server_command(self.spec, self.worker_id, os.getpid()),
                "--host",
                self.host,
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
        self.url = f"http://{self.host}:{port}"
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
        if self._proc is None:
            return
        if self._proc.returncode is None:
            await stop_tree(self._proc.pid)  # the server and every sandbox it still runs
            await self._proc.wait()
        if self._proc.stdout is not None:  # read to EOF, so that asyncio closes the process's transport now
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._proc.stdout.read(), 2.0)
        # Also when the worker was already dead (SIGKILLed from outside): a sandbox it was setting up may have
        # missed its parent-death signal and still run under its slot's uid.
        await asyncio.to_thread(kill_worker_uids, self.spec)


class LocalLauncher(WorkerLauncher):
    def __init__(self, config: PoolConfig | None = None) -> None:
        self.config = config or PoolConfig()

    def create(self, spec: WorkerSpec) -> WorkerHandle:
        return LocalWorker(spec)
