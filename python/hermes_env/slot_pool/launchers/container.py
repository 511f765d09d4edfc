"""Sandbox workers in containers (as in hermes-agent's atropos/ integration): each worker is one container running the
sandbox server, and its ``slots_per_worker`` slots share that container; the pool scales containers between its min
and max.

The container is the isolation boundary: its own filesystem (the worker image), no network unless the policy
allows it, memory / process / CPU limits for the whole worker; inside it the slots are separated as the server
separates them without bubblewrap (a uid per slot, private workspaces, rlimits per command) — bubblewrap cannot
mount ``/proc`` inside an unprivileged container.

The server runs this process's own ``hermes_env`` and Python packages, mounted read-only at the same paths, with
the image's ``python3`` (which must have this interpreter's minor version: the packages' compiled parts are built
for it). It listens on a Unix socket in the worker's root directory, bind-mounted at the same path, so the container
needs no network; a forwarder on 127.0.0.1 gives the pool the same ``http://`` URL every worker has.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from pathlib import Path

from hermes_env.containers.engine import (
    LABEL,
    ContainerEngine,
    detect_engine,
    ensure_reaper,
    sandbox_run_args,
    sweep_leftovers,
)
from hermes_env.containers.images import BASE_IMAGE
from hermes_env.errors import ContainerError, WorkerStartError
from hermes_env.resources import package_parent
from hermes_env.slot_pool.config import PoolConfig
from hermes_env.slot_pool.launchers.base import (
    SECRET_ENV,
    WorkerHandle,
    WorkerLauncher,
    WorkerSpec,
    parse_ready_line,
    server_command,
)

SOCKET_NAME = "server.sock"


def _python_paths() -> list[str]:
    """What the server must import from this process: the directory holding ``hermes_env``, then site-packages."""
    paths = [str(package_parent())]
    for entry in sys.path:
        if entry.endswith(("site-packages", "dist-packages")) and os.path.isdir(entry) and entry not in paths:
            paths.append(entry)
    return paths


class _Forwarder:
    """127.0.0.1:<port> -> the worker's Unix socket: one pair of byte pumps per connection."""

    def __init__(self, socket_path: Path) -> None:
        self.socket_path = socket_path
        self.port = 0
        self._server: asyncio.Server | None = None
        self._pumps: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._connection, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _connection(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            server_r, server_w = await asyncio.open_unix_connection(str(self.socket_path))
        except OSError:
            client_w.close()
            return
        for reader, writer in ((client_r, server_w), (server_r, client_w)):
            task = asyncio.create_task(self._pump(reader, writer))
            self._pumps.add(task)
            task.add_done_callback(self._pumps.discard)

    @staticmethod
    async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while chunk := await reader.read(65536):
                writer.write(chunk)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        for task in list(self._pumps):
            task.cancel()
        await asyncio.gather(*self._pumps, return_exceptions=True)


class ContainerWorker(WorkerHandle):
    """One sandbox server in its own container; ``pid`` is the server's host pid (the container's first process)."""

    def __init__(self, spec: WorkerSpec, launcher: ContainerLauncher) -> None:
        super().__init__(spec)
        self._launcher = launcher
        self.name = f"hermes_env-worker-{os.getpid()}-{launcher.serial()}"
        self._proc: asyncio.subprocess.Process | None = None
        self._forwarder: _Forwarder | None = None

    def _argv(self) -> list[str]:
        spec, launcher = self.spec, self._launcher
        limits = spec.policy.limits
        memory_mib = int(launcher.config.container_memory_bytes or spec.slots * int(limits.memory_bytes)) // 1024**2
        pids = launcher.config.container_max_processes or spec.slots * limits.max_processes + 64
        args = ["run", "--rm"]
        args += sandbox_run_args(
            self.name, "worker", memory_mib=memory_mib, max_processes=pids, cpus=launcher.config.container_cpus,
            allow_network=spec.policy.allow_network,
        )  # fmt: skip
        args += [
            "--volume", f"{spec.root}:{spec.root}:z",
            "--env", f"PYTHONPATH={os.pathsep.join(launcher.python_paths)}",
            "--env", "PYTHONDONTWRITEBYTECODE=1",
        ]  # fmt: skip
        for path in launcher.python_paths:
            args += ["--volume", f"{path}:{path}:ro"]
        if spec.secret:
            args += ["--env", SECRET_ENV]  # the value comes from this client's environment, not its command line
        # The server's own command line, run by the image's python3; the container is its parent-watch (the pool's
        # reaper and sweep remove it if the pool dies), so no --parent-pid.
        server = server_command(spec, self.worker_id, parent_pid=0, python="python3")
        args += ["--entrypoint", server[0], launcher.image, *server[1:]]
        args += ["--unix-socket", str(spec.root / SOCKET_NAME), "--isolation", "container"]
        return self._launcher.engine.argv(*args)

    async def start(self) -> None:
        await self._launcher.check_image()
        self.spec.root.mkdir(parents=True, exist_ok=True)
        log_path = self.spec.root / "server.log"
        env = dict(self._launcher.engine.env)
        if self.spec.secret:
            env[SECRET_ENV] = self.spec.secret
        with log_path.open("ab") as log_file:
            self._proc = await asyncio.create_subprocess_exec(
                *self._argv(),
                cwd=self.spec.root,  # podman's container monitor writes files into its working directory
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=log_file,
                env=env,
                start_new_session=True,
            )
        assert self._proc.stdout is not None
        try:
            line = await asyncio.wait_for(self._proc.stdout.readline(), self.spec.start_timeout_s)
            parse_ready_line(line, self.worker_id, log_path)
            self._forwarder = _Forwarder(self.spec.root / SOCKET_NAME)
            await self._forwarder.start()
            state = await self._launcher.engine.run(
                "inspect", "--type", "container", "--format", "{{.State.Pid}}", self.name, timeout=60
            )
        except TimeoutError as exc:
            await self.kill()
            raise WorkerStartError(
                f"sandbox container {self.worker_id} was not ready within {self.spec.start_timeout_s:g}s; "
                f"see {log_path}"
            ) from exc
        except (WorkerStartError, ContainerError) as exc:
            await self.kill()
            raise WorkerStartError(f"sandbox container {self.worker_id} failed to start: {exc}") from exc
        except asyncio.CancelledError:
            self._kill_now()
            raise
        except BaseException:
            await self.kill()
            raise
        self.pid = int(state.text.strip()) if state.text.strip().isdigit() else None
        self.url = f"http://127.0.0.1:{self._forwarder.port}"
        self.node_id = "local"

    def process_alive(self) -> bool:
        # The attached client exits when the container does, whatever ended it.
        return self._proc is not None and self._proc.returncode is None

    async def stop(self) -> None:
        try:
            if self.process_alive():
                with contextlib.suppress(ContainerError):
                    await self._launcher.engine.run("kill", "--signal", "TERM", self.name, check=False, timeout=30)
                assert self._proc is not None
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._proc.wait(), 10.0)
            await self.kill()
        except asyncio.CancelledError:
            self._kill_now()
            raise

    async def kill(self) -> None:
        try:
            # The attached client first (it is only a client: the container lives on until removed), so that
            # nothing naming this worker lingers while the engine, perhaps slow under load, removes the container.
            if self._proc is not None and self._proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    self._proc.kill()
                await self._proc.wait()
            with contextlib.suppress(ContainerError):
                await self._launcher.engine.remove(self.name)
        except asyncio.CancelledError:
            self._kill_now()
            raise
        finally:
            if self._forwarder is not None:
                forwarder, self._forwarder = self._forwarder, None
                await asyncio.shield(forwarder.close())

    def _kill_now(self) -> None:
        """Remove the container without awaiting anything: a stop or start that is being cancelled (the pool is
        closing) must still not leave its container behind."""
        with contextlib.suppress(ContainerError):
            self._launcher.engine.remove_sync([self.name])
        if self._proc is not None and self._proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self._proc.kill()


class ContainerLauncher(WorkerLauncher):
    """Workers as containers of ``config.container_image`` (the base image by default) on docker or podman."""

    def __init__(self, config: PoolConfig) -> None:
        try:
            self.engine: ContainerEngine = detect_engine(config.container_engine)
        except ContainerError as exc:
            raise WorkerStartError(f"the container launcher needs a container engine: {exc}") from exc
        self.config = config
        self.image = config.container_image or BASE_IMAGE
        self.python_paths = _python_paths()
        self._serial = 0
        self._checked: asyncio.Task[None] | None = None

    def serial(self) -> int:
        self._serial += 1
        return self._serial

    async def check_image(self) -> None:
        """Once: the image exists and its python3 can run this process's packages; a clear error otherwise."""
        if self._checked is None:
            self._checked = asyncio.ensure_future(self._check())
        await asyncio.shield(self._checked)

    async def _check(self) -> None:
        ensure_reaper(self.engine)
        await asyncio.to_thread(sweep_leftovers, self.engine)
        if await self.engine.image_id(self.image) is None:
            raise WorkerStartError(
                f"the worker image {self.image} is missing from {self.engine.name}; make the base image with "
                "`bash scripts/setup.sh` or set container_image to an image with python3"
            )
        result = await self.engine.run(
            "run", "--rm", "--network", "none", "--label", f"{LABEL}=probe", "--entrypoint", "python3", self.image,
            "-c", "import sys; print('%d.%d' % sys.version_info[:2])", check=False, timeout=120,
        )  # fmt: skip
        mine = f"{sys.version_info[0]}.{sys.version_info[1]}"
        theirs = result.text.strip()
        if result.returncode != 0 or theirs != mine:
            raise WorkerStartError(
                f"the worker image {self.image} must run Python {mine} (this interpreter's version: the mounted "
                f"packages are built for it), but its python3 says {theirs or result.err[-200:] or 'nothing'}; "
                "set container_image to an image with python3 of that version"
            )

    def create(self, spec: WorkerSpec) -> WorkerHandle:
        return ContainerWorker(spec, self)
