"""``docker`` backend: one container per rollout, on a Docker-compatible engine (docker, or podman here).

- The container starts on the task's first use, from the task's image (:meth:`DockerBackend.use_image`; the base
  image ``hermes_env/base:bookworm`` otherwise), with CPU, memory and process limits, no network unless
  ``allow_network``, an init that reaps orphans, and the workspace ``/workspace`` inside it (so files a task's
  image puts there are visible). ``cleanup`` removes it; so does the reaper if this process dies, and the next
  start's sweep if even the reaper was killed (:mod:`hermes_env.containers.engine`).
- Calls reach the container through its channel (FIFOs in a bind-mounted directory served by the container's main
  process: :mod:`hermes_env.containers.channel`), or with ``transport="exec"`` one ``<engine> exec`` each (for an
  engine on another machine, where no directory can be shared; ``auto`` picks it when ``DOCKER_HOST`` /
  ``CONTAINER_HOST`` point elsewhere). Either way a command runs under ``timeout`` (the per-call limit) in its own
  process group, killed when the call returns (:mod:`hermes_env.containers.shell`).
- File methods run in the container too (``readlink -f`` confines them to the workspace), so a task image's own
  files are seen exactly as its commands see them. An absolute path outside the workspace (``/tests``,
  ``/logs/verifier``) is that path in the container: the container is the task's sandbox, as for its commands.
- A container that dies, an engine that cannot start one, an image that fails to build and a command killed by
  the out-of-memory killer raise :class:`ContainerLostError`, a ``BackendFailure``: the rollout fails and its group
  is dropped. A failing or timed-out command is an :class:`ExecResult`, as on every backend.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from pydantic import BaseModel

from hermes_env.backends.base import ExecResult, ExecutionBackend
from hermes_env.backends.options import DockerOptions
from hermes_env.containers import shell
from hermes_env.containers.channel import LOOP_SCRIPT, MOUNT, Channel
from hermes_env.containers.engine import (
    ContainerEngine,
    detect_engine,
    ensure_reaper,
    sandbox_run_args,
    sweep_leftovers,
)
from hermes_env.containers.images import ImageCache, ImageSpec
from hermes_env.errors import (
    ChannelClosedError,
    ContainerError,
    ContainerLostError,
    EngineCommandError,
    FileTooLargeError,
    WorkspacePathError,
)
from hermes_env.isolation.limits import MiB, ResourceLimits
from hermes_env.isolation.paths import root_relative, workspace_relative
from hermes_env.isolation.process import (
    TIMEOUT_EXIT_CODE,
    command_line,
    pids_working_in,
    run_limited,
    stop_tree,
    truncation_note,
)
from hermes_env.isolation.roots import RunRoot, sweep_dead_runs

Transport = Literal["auto", "channel", "exec"]


_FILE_ERRORS: dict[int, tuple[type[OSError], str]] = {
    shell.FILE_MISSING: (FileNotFoundError, "no such file or directory in the workspace"),
    shell.FILE_OUTSIDE: (WorkspacePathError, "resolves outside the workspace (a symlink pointing out?)"),
    shell.FILE_IS_DIR: (IsADirectoryError, "is a directory"),
    shell.FILE_NOT_REGULAR: (PermissionError, "is not a regular file (device, fifo or socket)"),
    # As the other backends (hermes_env.isolation.paths): a path that goes through a file is refused, not missing.
    shell.FILE_BAD_PARENT: (WorkspacePathError, "goes through a file: a part of it is not a plain directory"),
}
# Exit codes after which the container itself may be the problem (engine errors, signals): its state is checked.
_SUSPECT_EXIT = frozenset({125, 126, 127, 137, 255})
# Seconds the engine's client may take beyond a command's own limit before the call counts as hung.
_ENGINE_GRACE_S = 30.0
# As on the bwrap backend: no .pyc files in the workspace, no colour codes in outputs the model reads.
_DEFAULT_ENV = {"PYTHONDONTWRITEBYTECODE": "1", "TERM": "dumb"}
_KEEPALIVE = 'mkdir -p -- "$0"; exec sleep infinity 2>/dev/null || while :; do sleep 3600; done'

_swept_engines: set[str] = set()
log = logging.getLogger(__name__)


def _monitors(pid: int, name: str) -> bool:
    """Whether ``pid`` is the engine's monitor of container ``name`` (conmon's ``-n NAME``)."""
    argv = command_line(pid)
    return any(flag in ("-n", "--name") and value == name for flag, value in itertools.pairwise(argv))


def _remote_engine() -> bool:
    for var in ("DOCKER_HOST", "CONTAINER_HOST"):
        value = os.environ.get(var, "")
        if value and not value.startswith("unix://"):
            return True
    return False


@dataclass(frozen=True, slots=True)
class ContainerOptions:
    """What one task's container needs beyond the backend's settings (``None``: the backend's value).

    ``mounts``: ``(host path, container path)`` pairs, mounted read-only (the container cannot change them).
    ``workspace``: where commands run and file paths are relative to (e.g. the image's ``WORKDIR``).
    """

    memory_mib: int | None = None
    cpus: float | None = None
    allow_network: bool | None = None
    workspace: str | None = None
    mounts: tuple[tuple[str, str], ...] = ()
    env: tuple[tuple[str, str], ...] = ()


@dataclass
class _Container:
    name: str
    workspace: str = "/workspace"
    memory_mib: int = 0
    image: str = ""
    cid: str = ""
    channel: Channel | None = None
    oom_kills: int = 0
    lost: str | None = None
    removed: bool = False  # by cleanup/aclose: a call still running then ends as a failed call, not a lost sandbox
    ready: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass(frozen=True, slots=True)
class _Outcome:
    """One call as the transport saw it; the backend decides what it means."""

    exit_code: int
    data: bytes
    more_bytes: int = 0
    oom_kills: int | None = None
    hung: bool = False  # no answer even after the deadline and a kill
    truncated: bool = False  # cut (and noted in data) by the exec transport's reader


class DockerBackend(ExecutionBackend):
    """One container per task id, started on first use, removed by ``cleanup``."""

    name = "docker"
    supports_images = True

    options_model = DockerOptions
    # The ResourceLimits this backend applies (and so accepts as options): see DockerOptions.
    limit_options: ClassVar[frozenset[str]] = DockerOptions.limit_names

    def __init__(
        self,
        *,
        engine: str | None = None,
        image: str | None = None,
        allow_network: bool = False,
        cpus: float = 1.0,
        workspace: str = "/workspace",
        env: dict[str, str] | None = None,
        transport: Transport = "auto",
        start_timeout_s: float = 120.0,
        image_build_timeout_s: float = 900.0,
        labels: dict[str, str] | None = None,
        limits: ResourceLimits | Mapping[str, Any] | None = None,
        **limit_options: Any,
    ) -> None:
        self.limits = self.resource_limits(limits, limit_options)
        if cpus <= 0:
            raise ValueError(f"docker backend option cpus must be positive, got {cpus}")
        if not workspace.startswith("/") or workspace.rstrip("/") in ("", "/proc", "/dev", "/sys", "/etc", "/usr"):
            raise ValueError(f"workspace must be an absolute path outside system dirs, got {workspace!r}")
        if transport not in ("auto", "channel", "exec"):
            raise ValueError(f"transport must be auto, channel or exec, got {transport!r}")
        self.engine: ContainerEngine = detect_engine(engine)
        self.images = ImageCache(self.engine, build_timeout_s=image_build_timeout_s)
        self.default_image = ImageSpec(image=image) if image else None
        self.allow_network = allow_network
        self.cpus = cpus
        self.workspace = workspace.rstrip("/")
        self.extra_env = dict(env or {})
        self.labels = dict(labels or {})  # extra labels on each container (e.g. the Ray node it runs for)
        self.transport = ("exec" if _remote_engine() else "channel") if transport == "auto" else transport
        self.memory_mib = int(self.limits.memory_bytes) // MiB
        self.max_processes = self.limits.max_processes
        self.max_output_bytes = int(self.limits.max_output_bytes)
        self.kill_output_bytes = int(self.limits.kill_output_bytes)
        self.max_file_bytes = int(self.limits.max_file_bytes)
        self.max_read_bytes = int(self.limits.max_read_bytes)
        self.start_timeout_s = start_timeout_s
        self._images: dict[str, ImageSpec] = {}
        self._options: dict[str, ContainerOptions] = {}
        self._prepare: dict[str, Callable[[], Awaitable[tuple[str, ContainerOptions]]]] = {}
        self._containers: dict[str, _Container] = {}
        self._names = itertools.count()
        self._run_id = uuid.uuid4().hex[:8]
        self._root: RunRoot | None = None

    @classmethod
    def from_config(cls, config: BaseModel) -> ExecutionBackend:
        """With ``ray_address`` (a Ray cluster's address, or ``auto``): the containers spread over the cluster's
        nodes, each node running them on its own engine (:class:`~hermes_env.backends.ray_docker.RayDockerBackend`,
        given the other options for every node)."""
        assert isinstance(config, DockerOptions)
        options = config.backend_kwargs()
        ray_address = options.pop("ray_address", None)
        if ray_address is None:
            return cls(**options)
        cls(**options)  # the engine and the options are checked here, before any node is asked
        from hermes_env.backends.ray_docker import RayDockerBackend

        return RayDockerBackend(ray_address=ray_address, node_backend=cls, node_options=options)

    @classmethod
    def is_available(cls) -> bool:
        try:
            detect_engine(None)
        except ContainerError:
            return False
        return True

    def describe(self) -> str:
        return (
            f"docker({self.engine.name}, network={'on' if self.allow_network else 'off'}, cpus={self.cpus:g}, "
            f"memory={self.memory_mib}MiB, pids={self.max_processes}, transport={self.transport})"
        )

    def visible_roots(self, task_id: str) -> tuple[str, ...]:
        options = self._options.get(task_id)
        return ((options.workspace if options and options.workspace else self.workspace),)

    # -- container lifecycle ------------------------------------------------------------------------------------------
    def use_image(
        self,
        task_id: str,
        spec: ImageSpec | None,
        options: ContainerOptions | None = None,
        *,
        prepare: Callable[[], Awaitable[tuple[str, ContainerOptions]]] | None = None,
    ) -> None:
        """Run ``task_id``'s container from ``spec`` (None: the backend's default image), with ``options`` over the
        backend's settings; before its first use. ``prepare``, when given, is awaited when the container starts
        instead of resolving ``spec``: it builds what the task needs and returns the image and its options."""
        if prepare is None:
            self._prepare.pop(task_id, None)
        else:
            self._prepare[task_id] = prepare
        if task_id in self._containers:
            raise RuntimeError(f"task {task_id!r} already has a container; name its image before its first use")
        if options is not None and options.workspace is not None:
            ws = options.workspace.rstrip("/")
            if not options.workspace.startswith("/") or ws in ("", "/proc", "/dev", "/sys"):
                raise ValueError(f"workspace must be an absolute path outside system dirs, got {options.workspace!r}")
        if spec is None:
            self._images.pop(task_id, None)
        else:
            self._images[task_id] = spec
        if options is None:
            self._options.pop(task_id, None)
        else:
            self._options[task_id] = options

    async def copy_in(self, task_id: str, source: str | os.PathLike[str], target: str) -> None:
        """Copy a host directory's contents into the container at ``target`` (an absolute path, made if missing),
        outside the workspace's confinement: for the harness (a verifier's files), never for the model's tools."""
        box = await self._container(task_id)
        made = await self.engine.run("exec", box.cid, "mkdir", "-p", "--", target, check=False, timeout=60)
        if made.returncode != 0:
            raise OSError(f"cannot make {target} in the container of task {task_id!r}: {made.err[-300:]}")
        result = await self.engine.run("cp", f"{os.fspath(source)}/.", f"{box.cid}:{target}", check=False, timeout=600)
        if result.returncode != 0:
            raise OSError(f"copying {os.fspath(source)} to {target} in task {task_id!r} failed: {result.err[-300:]}")

    async def disconnect_network(self, task_id: str) -> None:
        """Take the network away from a running container (a verifier that must run offline); a no-op where it has
        none. OSError where the engine cannot (then the caller must not go on as if it were offline)."""
        box = await self._container(task_id)
        fmt = "{{range $k, $v := .NetworkSettings.Networks}}{{$k}} {{end}}"
        found = await self.engine.run("inspect", "--type", "container", "--format", fmt, box.cid, check=False)
        for network in found.text.split():
            if network in ("none", "host"):
                continue
            result = await self.engine.run("network", "disconnect", network, box.cid, check=False, timeout=60)
            if result.returncode != 0:
                raise OSError(f"cannot take network {network!r} from task {task_id!r}'s container: {result.err[-300:]}")

    async def start(self, task_id: str) -> None:
        await self._container(task_id)

    async def _container(self, task_id: str) -> _Container:
        box = self._containers.get(task_id)
        if box is None:
            box = _Container(name=f"hermes_env-{self._run_id}-{next(self._names)}")
            self._containers[task_id] = box
            try:
                await self._start(task_id, box)
            except BaseException as exc:
                box.lost = str(exc) if isinstance(exc, ContainerError) else f"start interrupted: {exc!r}"
                raise
            finally:
                box.ready.set()
        else:
            await box.ready.wait()
        if box.lost is not None:
            raise ContainerLostError(box.lost)
        return box

    def _run_root(self) -> RunRoot:
        """This backend's directory: the containers' channels, and the engine's working directory (podman's monitor
        writes files into it). Mode 0700: only this user reaches the channels; each is mounted into one container."""
        if self._root is None:
            self._root = RunRoot("docker", mode=0o700)
        return self._root

    async def _start(self, task_id: str, box: _Container) -> None:
        if self.engine.program not in _swept_engines:
            _swept_engines.add(self.engine.program)
            ensure_reaper(self.engine)
            await asyncio.to_thread(sweep_leftovers, self.engine)
            await asyncio.to_thread(sweep_dead_runs)
        spec = self._images.get(task_id, self.default_image)
        options = self._options.get(task_id, ContainerOptions())
        prepare = self._prepare.get(task_id)
        try:
            if prepare is not None:
                box.image, options = await prepare()
                self._options[task_id] = options
            else:
                box.image = await self.images.resolve(spec)
        except ContainerError as exc:
            raise ContainerLostError(f"no image for task {task_id!r}: {exc}") from exc
        box.workspace = (options.workspace or self.workspace).rstrip("/")
        box.memory_mib = options.memory_mib or self.memory_mib
        network = self.allow_network if options.allow_network is None else options.allow_network
        args = ["run", "-d", "--init", "--security-opt", "no-new-privileges"]
        args += sandbox_run_args(
            box.name, "rollout", memory_mib=box.memory_mib, max_processes=self.max_processes,
            cpus=options.cpus or self.cpus, allow_network=network,
        )  # fmt: skip
        for key, value in self.labels.items():
            args += ["--label", f"{key}={value}"]
        for key, value in {**_DEFAULT_ENV, **self.extra_env, **dict(options.env)}.items():
            args += ["--env", f"{key}={value}"]
        for host, inside in options.mounts:
            args += ["--volume", f"{host}:{inside}:ro"]
        root = self._run_root()
        if self.transport == "channel":
            channel = box.channel = Channel(root.path / box.name)
            args += ["--volume", f"{channel.dir}:{MOUNT}:z", "--entrypoint", "/bin/sh", box.image]
            args += [f"{MOUNT}/{LOOP_SCRIPT}", box.workspace]
            flood = self.kill_output_bytes - self.max_output_bytes  # bytes counted past the kept ones, then SIGPIPE
            args += [str(self.max_output_bytes), str(flood), str(self.max_read_bytes + 1)]
        else:
            args += ["--entrypoint", "/bin/sh", box.image, "-c", _KEEPALIVE, box.workspace]
        try:
            result = await self.engine.run(*args, timeout=self.start_timeout_s, cwd=root.path, finish_on_cancel=True)
            box.cid = result.text.strip().splitlines()[-1] if result.text.strip() else box.name
            if box.channel is not None:
                await box.channel.wait_ready(self.start_timeout_s)
        except BaseException as exc:
            # A half-created container must not outlive a failed or cancelled start.
            await asyncio.shield(self._remove(box))
            await asyncio.shield(self._stop_lost_monitors(box.name))
            if isinstance(exc, EngineCommandError | ChannelClosedError | TimeoutError):
                raise ContainerLostError(
                    f"{self.engine.name} could not start a container from {box.image} for task {task_id!r}: {exc}"
                ) from exc
            raise

    async def _remove(self, box: _Container) -> None:
        await self.engine.remove(box.cid or box.name)
        if box.channel is not None:
            box.channel.close()

    async def cleanup(self, task_id: str) -> None:
        self._images.pop(task_id, None)
        self._prepare.pop(task_id, None)
        self._options.pop(task_id, None)
        box = self._containers.pop(task_id, None)
        if box is not None:
            box.removed = True
            await box.ready.wait()
            await asyncio.shield(self._remove(box))

    async def aclose(self) -> None:
        boxes = list(self._containers.values())
        self._containers.clear()
        self._images.clear()
        self._prepare.clear()
        self._options.clear()
        for box in boxes:
            box.removed = True
        if boxes:
            await asyncio.shield(self.engine.remove(*(b.cid or b.name for b in boxes)))
        for box in boxes:
            if box.channel is not None:
                box.channel.close()
        if self._root is not None:
            await asyncio.shield(self._stop_lost_monitors())
            self._root.remove()
            self._root = None

    async def _stop_lost_monitors(self, name: str | None = None, *, settle_s: float = 3.0) -> None:
        """Stop what still works in this run's directory once its containers are removed: podman's monitor
        (``conmon``, started there by ``run``) of a container the engine no longer lists, with its ``runc init``.

        A ``run`` killed past its timeout between the runtime's ``create`` and podman's own bookkeeping leaves
        such a pair, which no engine command sees and which waits forever. ``name``: only that container's
        monitor. A monitor of a removed container exits by itself within ``settle_s``.
        """
        if self._root is None:
            return
        deadline = time.monotonic() + settle_s
        while True:
            left = [pid for pid in pids_working_in(self._root.path) if name is None or _monitors(pid, name)]
            if not left or time.monotonic() >= deadline:
                break
            await asyncio.sleep(0.1)
        for pid in left:
            log.warning("stopping pid %d (%s), left working in %s by a container start that did not finish",
                        pid, " ".join(command_line(pid))[:120], self._root.path)  # fmt: skip
            await stop_tree(pid)

    async def _lost(self, task_id: str, box: _Container, what: str) -> ContainerLostError:
        """The error for a container that stopped answering; the container is removed (it is of no further use)."""
        state = await self.engine.state(box.cid)
        box.lost = f"the container of task {task_id!r} died {what}: {state.describe()}"
        await self._remove(box)
        return ContainerLostError(box.lost)

    async def _oom_lost(self, task_id: str, box: _Container, kills: int | None) -> None:
        """Raise ContainerLostError if the container's out-of-memory kill count went up."""
        if kills is None:
            result = await self.engine.run("exec", box.cid, "/bin/sh", "-c", shell.OOM_PROBE, check=False, timeout=60)
            kills = int(result.text.split()[0]) if result.text.split() and result.text.split()[0].isdigit() else 0
        if kills > box.oom_kills:
            box.oom_kills = kills
            box.lost = (
                f"a command of task {task_id!r} was killed by the out-of-memory killer: the container's memory limit "
                f"is {box.memory_mib} MiB (the limit memory_bytes)"
            )
            await self._remove(box)
            raise ContainerLostError(box.lost)

    # -- transports -----------------------------------------------------------------------------------------------
    @staticmethod
    def _channel(box: _Container) -> Channel | None:
        """The container's channel where this call can use it: on the event loop that made it. A synchronous
        ToolContext call runs on the sync bridge's loop while the caller's loop waits (hermes_env.sync_bridge), and
        goes through the engine's exec instead."""
        if box.channel is not None and box.channel.loop is asyncio.get_running_loop():
            return box.channel
        return None

    async def _call(self, box: _Container, op: str, timeout: float, inputs: dict[str, bytes], arg: str) -> _Outcome:
        channel = self._channel(box)
        if channel is not None:
            answer = await channel.call(op, arg, inputs, timeout)
            if answer is None:
                return _Outcome(exit_code=-9, data=b"", hung=True)
            return _Outcome(answer.exit_code, answer.output, answer.more_bytes, answer.oom_kills)
        if op == "run":
            argv = self.engine.argv("exec", *(["-i"] if "in" in inputs else []), box.cid, "/bin/sh", "-c")
            argv += [shell.EXEC_WRAPPER, "hermes_env", box.workspace, arg, inputs["cmd"].decode()]
            result = await run_limited(
                argv,
                cwd="/",
                env=self.engine.env,
                timeout=timeout,
                stdin=inputs.get("in"),
                max_output_bytes=self.max_output_bytes,
                kill_output_bytes=self.kill_output_bytes,
            )
            data = result.output.encode()
            return _Outcome(result.exit_code, data, hung=result.timed_out, truncated=result.truncated)
        script = shell.FILE_OP + 'file_op "$@"'
        result = await self.engine.run(
            "exec", *(["-i"] if op == "write" else []), box.cid, "/bin/sh", "-c", script,
            "hermes_env", op, box.workspace, inputs["path"].decode(), str(self.max_read_bytes + 1),
            input=inputs.get("data"), check=False, timeout=timeout,
        )  # fmt: skip
        return _Outcome(result.returncode, result.stdout if result.returncode == 0 else result.stderr)

    # -- commands -----------------------------------------------------------------------------------------------------
    async def execute(self, task_id: str, command: str, timeout: float, *, stdin: str | None = None) -> ExecResult:
        if timeout <= 0:
            return ExecResult.failure("bad_arguments", f"timeout must be positive, got {timeout}")
        box = await self._container(task_id)
        inputs = {"cmd": command.encode()}
        if stdin is not None:
            inputs["in"] = stdin.encode()
        started = time.monotonic()
        try:
            grace = _ENGINE_GRACE_S if self._channel(box) is None else 1.0
            outcome = await self._call(box, "run", timeout + grace, inputs, f"{timeout:.3f}")
        except ChannelClosedError:
            if box.removed:
                return ExecResult(output="", exit_code=-9, error=f"task {task_id!r} was cleaned up while this ran")
            raise await self._lost(task_id, box, "during a call") from None
        elapsed = time.monotonic() - started
        code = outcome.exit_code
        if box.removed and (outcome.hung or code in _SUSPECT_EXIT or code < 0):
            return ExecResult(output="", exit_code=code, error=f"task {task_id!r} was cleaned up while this call ran")
        if outcome.hung:
            state = await self.engine.state(box.cid)
            if not state.running:
                raise await self._lost(task_id, box, "during a call")
            return ExecResult(
                output=outcome.data.decode("utf-8", "replace"),
                exit_code=-9,
                timed_out=True,
                error=f"the call did not end within {timeout:g}s even after its processes were killed",
            )
        timed_out = code in (124, 137) and elapsed >= timeout
        if code in _SUSPECT_EXIT or code < 0:
            if self._channel(box) is None:
                state = await self.engine.state(box.cid)
                if not state.running:
                    raise await self._lost(task_id, box, "during a call")
            if code == 137 and not timed_out:
                await self._oom_lost(task_id, box, outcome.oom_kills)
        output = outcome.data.decode("utf-8", "replace")
        truncated = outcome.truncated or outcome.more_bytes > 0
        if outcome.more_bytes:
            total = len(outcome.data) + outcome.more_bytes
            output += truncation_note(len(outcome.data), total)
            if total >= self.kill_output_bytes:
                output += f"\n[command stopped: it wrote more than {self.kill_output_bytes} bytes of output]"
        if timed_out:
            output += f"\n[timed out after {timeout:g}s; the command and its child processes were killed]"
            code = TIMEOUT_EXIT_CODE  # as every backend reports a timeout
        return ExecResult(output=output, exit_code=code, timed_out=timed_out, truncated=truncated)

    # -- files --------------------------------------------------------------------------------------------------------
    def _container_path(self, path: str) -> str:
        """The path file_op gets: workspace-relative, or absolute (normalised) for one outside the workspace."""
        if path.startswith("/") and not (path == self.workspace or path.startswith(self.workspace + "/")):
            rel = root_relative(path)
            return "/" + ("" if str(rel) == "." else str(rel))
        return str(workspace_relative(path, self.visible_roots("")))

    async def _file_op(self, task_id: str, op: str, path: str, *, data: bytes | None = None) -> bytes:
        rel = self._container_path(path)
        if op == "write" and rel in (".", "/"):
            raise IsADirectoryError(f"{path!r} is a directory, not a file")
        box = await self._container(task_id)
        inputs = {"path": rel.encode()}
        if data is not None:
            inputs["data"] = data
        try:
            outcome = await self._call(box, op, self.start_timeout_s, inputs, "-")
        except ChannelClosedError:
            raise await self._lost(task_id, box, f"during {op}_file") from None
        if outcome.exit_code == 0:
            return outcome.data
        known = _FILE_ERRORS.get(outcome.exit_code)
        if known is not None:
            raise known[0](f"{path!r} {known[1]}")
        state = await self.engine.state(box.cid)
        if not state.running:
            raise await self._lost(task_id, box, f"during {op}_file")
        detail = outcome.data.decode("utf-8", "replace")[-300:]
        raise OSError(f"{op}_file {path!r} failed in the container (exit {outcome.exit_code}): {detail}")

    async def read_file(self, task_id: str, path: str) -> bytes:
        data = await self._file_op(task_id, "read", path)
        if len(data) > self.max_read_bytes:
            raise FileTooLargeError(f"{path!r} is larger than the read limit max_read_bytes ({self.max_read_bytes})")
        return data

    async def write_file(self, task_id: str, path: str, data: bytes) -> None:
        if not isinstance(data, bytes | bytearray | memoryview):
            raise TypeError(f"data must be bytes, got {type(data).__name__}")
        if len(data) > self.max_file_bytes:
            raise FileTooLargeError(
                f"refusing to write {len(data)} bytes to {path!r}: the limit max_file_bytes is {self.max_file_bytes}"
            )
        await self._file_op(task_id, "write", path, data=bytes(data))

    async def list_files(self, task_id: str, path: str = ".") -> list[str]:
        """Workspace-relative paths, or absolute ones for a path outside the workspace (``/logs/verifier``)."""
        raw = await self._file_op(task_id, "list", path)
        root, *found = [p.decode("utf-8", "surrogateescape") for p in raw.split(b"\0") if p]
        prefix = root.rstrip("/") + "/"
        lead = "/" if self._container_path(path).startswith("/") else ""
        return sorted(lead + p[len(prefix) :] for p in found if p.startswith(prefix))
