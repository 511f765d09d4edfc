"""``docker`` backend: one container per rollout, on a Docker-compatible engine (docker, or podman here).

- The container starts on the task's first use, from the task's image (:meth:`DockerBackend.use_image`; the base
  image ``hermes_env/base:bookworm`` otherwise), with CPU, memory and process limits, no network unless
  ``allow_network``, an init that reaps orphans, and the workspace ``/workspace`` inside it (so files a task's
  image puts there are visible). ``cleanup`` removes it; so does the reaper if this process dies, and the next
  start's sweep if even the reaper was killed (:mod:`hermes_env.containers.engine`).
- A command runs as ``<engine> exec`` of a small POSIX-sh wrapper: it enters the workspace and runs the command
  under ``timeout`` (the per-call limit) in its own process group, which is killed when the call returns, so
  what a command leaves running ends with the call, as on the other backends.
- File methods run in the container too (``readlink -f`` confines them to the workspace, ``head -c`` bounds a
  read), so a task image's own files are seen exactly as its commands see them.
- A container that dies, an engine that fails to start one, an image that fails to build and a command killed by
  the out-of-memory killer raise :class:`ContainerLostError` (an infrastructure failure: the rollout fails and its
  group is dropped); an ordinary failing or timed-out command is an :class:`ExecResult`, as elsewhere.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import time
import uuid
from dataclasses import dataclass, field

from hermes_env.backends.base import ExecResult, ExecutionBackend
from hermes_env.backends.paths import WorkspacePathError, workspace_relative
from hermes_env.backends.process import run_process
from hermes_env.containers.engine import (
    LABEL,
    OWNER_LABEL,
    ContainerEngine,
    ContainerError,
    EngineCommandError,
    detect_engine,
    ensure_reaper,
    owner_token,
    sweep_leftovers,
)
from hermes_env.containers.images import ImageCache, ImageSpec


class ContainerLostError(ContainerError):
    """The rollout's container could not be started, died, or a command in it was killed for memory."""


# $1 workspace, $2 seconds, $3 command. Exit 125 (the engines' own "could not run") when the workspace is unusable.
_EXEC_WRAPPER = r"""
cd "$1" 2>/dev/null || { mkdir -p -- "$1" && cd "$1"; } || { echo "hermes_env: cannot enter $1" >&2; exit 125; }
if [ -x /bin/bash ]; then sh=/bin/bash; else sh=/bin/sh; fi
if command -v timeout >/dev/null 2>&1; then
    exec 3<&0
    timeout -s KILL "$2" "$sh" -c "$3" <&3 3<&- &
    pid=$!
    wait "$pid"; rc=$?
    kill -9 -"$pid" 2>/dev/null
    exit "$rc"
fi
exec "$sh" -c "$3"
"""

# $1 operation, $2 workspace, $3 workspace-relative path, $4 byte limit (read). Exit codes: see _FILE_ERRORS.
_FILE_HELPER = r"""
op=$1; p=$3
W=$(readlink -f -- "$2") || exit 90
inside() { case "$1" in "$W"|"$W"/*) return 0;; *) return 1;; esac; }
case "$op" in
read)
    [ -e "$W/$p" ] || exit 91
    r=$(readlink -f -- "$W/$p") && inside "$r" || exit 92
    [ -d "$r" ] && exit 93
    [ -f "$r" ] || exit 95
    exec head -c "$4" -- "$r" ;;
write)
    t=$W/$p; d=${t%/*}; e=$d
    while [ ! -e "$e" ] && [ ! -L "$e" ]; do e=${e%/*}; done
    re=$(readlink -f -- "$e") && inside "$re" || exit 92
    [ -d "$re" ] || exit 96
    mkdir -p -- "$d" 2>/dev/null || exit 96
    if [ -L "$t" ]; then rt=$(readlink -f -- "$t") && inside "$rt" || exit 92; fi
    [ -d "$t" ] && exit 93
    exec cat > "$t" ;;
list)
    [ -e "$W/$p" ] || exit 91
    r=$(readlink -f -- "$W/$p") && inside "$r" || exit 92
    printf '%s\0' "$W"
    exec find "$r" -type f -print0 ;;
esac
exit 97
"""

_FILE_ERRORS: dict[int, tuple[type[OSError], str]] = {
    91: (FileNotFoundError, "no such file or directory in the workspace"),
    92: (WorkspacePathError, "resolves outside the workspace (a symlink pointing out?)"),
    93: (IsADirectoryError, "is a directory"),
    95: (PermissionError, "is not a regular file (device, fifo or socket)"),
    96: (NotADirectoryError, "has a parent that is not a directory"),
}

_OOM_PROBE = "cat /sys/fs/cgroup/memory.events /sys/fs/cgroup/memory/memory.oom_control 2>/dev/null"
_OOM_LINE = re.compile(rb"^oom_kill (\d+)$", re.MULTILINE)
# Exit codes after which the container itself may be the problem (engine errors, signals): its state is checked.
_SUSPECT_EXIT = frozenset({125, 126, 127, 137, 255})
# Seconds the engine's client may take beyond a command's own limit before the call counts as hung.
_ENGINE_GRACE_S = 30.0
_KEEPALIVE = 'mkdir -p -- "$0"; exec sleep infinity 2>/dev/null || while :; do sleep 3600; done'

_swept_engines: set[str] = set()


@dataclass
class _Container:
    name: str
    image: str
    cid: str = ""
    oom_kills: int = 0
    lost: str | None = None
    removed: bool = False  # by cleanup/aclose: a call still running then ends as a failed call, not a lost sandbox
    ready: asyncio.Event = field(default_factory=asyncio.Event)


class DockerBackend(ExecutionBackend):
    """One container per task id, started on first use, removed by ``cleanup``."""

    name = "docker"
    supports_images = True

    def __init__(
        self,
        *,
        engine: str | None = None,
        image: str | None = None,
        allow_network: bool = False,
        cpus: float = 1.0,
        memory_mb: int = 1024,
        max_processes: int = 256,
        workspace: str = "/workspace",
        env: dict[str, str] | None = None,
        max_output_bytes: int = 256 * 1024,
        kill_output_bytes: int = 32 * 1024 * 1024,
        max_file_bytes: int = 64 * 1024 * 1024,
        start_timeout_s: float = 120.0,
        image_build_timeout_s: float = 900.0,
    ) -> None:
        for label, value in (("cpus", cpus), ("memory_mb", memory_mb), ("max_processes", max_processes)):
            if value <= 0:
                raise ValueError(f"docker backend option {label} must be positive, got {value}")
        if memory_mb < 6:
            raise ValueError(f"memory_mb={memory_mb} is below what any engine can start a container with (6)")
        if not workspace.startswith("/") or workspace.rstrip("/") in ("", "/proc", "/dev", "/sys", "/etc", "/usr"):
            raise ValueError(f"workspace must be an absolute path outside system dirs, got {workspace!r}")
        if max_output_bytes <= 0 or kill_output_bytes < max_output_bytes:
            raise ValueError("max_output_bytes must be above 0 and at most kill_output_bytes")
        self.engine: ContainerEngine = detect_engine(engine)
        self.images = ImageCache(self.engine, build_timeout_s=image_build_timeout_s)
        self.default_image = ImageSpec(image=image) if image else None
        self.allow_network = allow_network
        self.cpus = cpus
        self.memory_mb = memory_mb
        self.max_processes = max_processes
        self.workspace = workspace.rstrip("/")
        self.extra_env = dict(env or {})
        self.max_output_bytes = max_output_bytes
        self.kill_output_bytes = kill_output_bytes
        self.max_file_bytes = max_file_bytes
        self.start_timeout_s = start_timeout_s
        self._images: dict[str, ImageSpec] = {}
        self._containers: dict[str, _Container] = {}
        self._names = itertools.count()
        self._run_id = uuid.uuid4().hex[:8]

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
            f"memory={self.memory_mb}MiB, pids={self.max_processes})"
        )

    # -- container lifecycle ------------------------------------------------------------------------------------------
    def use_image(self, task_id: str, spec: ImageSpec | None) -> None:
        """Run ``task_id``'s container from ``spec`` (None: the backend's default image); before its first use."""
        if task_id in self._containers:
            raise RuntimeError(f"task {task_id!r} already has a container; name its image before its first use")
        if spec is None:
            self._images.pop(task_id, None)
        else:
            self._images[task_id] = spec

    async def start(self, task_id: str) -> None:
        await self._container(task_id)

    async def _container(self, task_id: str) -> _Container:
        box = self._containers.get(task_id)
        if box is None:
            box = _Container(name=f"hermes_env-{self._run_id}-{next(self._names)}", image="")
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

    async def _start(self, task_id: str, box: _Container) -> None:
        if self.engine.program not in _swept_engines:
            _swept_engines.add(self.engine.program)
            ensure_reaper(self.engine)
            await asyncio.to_thread(sweep_leftovers, self.engine)
        spec = self._images.get(task_id, self.default_image)
        try:
            box.image = await self.images.resolve(spec)
        except ContainerError as exc:
            raise ContainerLostError(f"no image for task {task_id!r}: {exc}") from exc
        args = [
            "run", "-d", "--init",
            "--name", box.name,
            "--label", f"{LABEL}=rollout",
            "--label", f"{OWNER_LABEL}={owner_token()}",
            "--hostname", "sandbox",
            "--memory", f"{self.memory_mb}m", "--memory-swap", f"{self.memory_mb}m",
            "--pids-limit", str(self.max_processes),
            "--cpus", f"{self.cpus:g}",
            "--security-opt", "no-new-privileges",
        ]  # fmt: skip
        if not self.allow_network:
            args += ["--network", "none"]
        for key, value in self.extra_env.items():
            args += ["--env", f"{key}={value}"]
        args += ["--entrypoint", "/bin/sh", box.image, "-c", _KEEPALIVE, self.workspace]
        try:
            result = await self.engine.run(*args, timeout=self.start_timeout_s)
        except BaseException as exc:
            # A half-created container must not outlive a failed or cancelled start.
            await asyncio.shield(self.engine.remove(box.name))
            if isinstance(exc, EngineCommandError):
                raise ContainerLostError(
                    f"{self.engine.name} could not start a container from {box.image} for task {task_id!r}: {exc}"
                ) from exc
            raise
        box.cid = result.text.strip().splitlines()[-1] if result.text.strip() else box.name

    async def cleanup(self, task_id: str) -> None:
        self._images.pop(task_id, None)
        box = self._containers.pop(task_id, None)
        if box is not None:
            box.removed = True
            await box.ready.wait()
            await asyncio.shield(self.engine.remove(box.cid or box.name))

    async def aclose(self) -> None:
        boxes = list(self._containers.values())
        self._containers.clear()
        self._images.clear()
        for box in boxes:
            box.removed = True
        if boxes:
            await asyncio.shield(self.engine.remove(*(b.cid or b.name for b in boxes)))

    async def _lost(self, task_id: str, box: _Container, what: str) -> ContainerLostError:
        """The error for a container that stopped answering; the container is removed (it is of no further use)."""
        state = await self.engine.state(box.cid)
        box.lost = f"the container of task {task_id!r} died {what}: {state.describe()}"
        await self.engine.remove(box.cid)
        return ContainerLostError(box.lost)

    async def _oom_kills(self, box: _Container) -> int:
        result = await self.engine.run("exec", box.cid, "/bin/sh", "-c", _OOM_PROBE, check=False, timeout=60)
        return sum(int(n) for n in _OOM_LINE.findall(result.stdout))

    # -- commands -----------------------------------------------------------------------------------------------------
    async def execute(self, task_id: str, command: str, timeout: float, *, stdin: str | None = None) -> ExecResult:
        if timeout <= 0:
            return ExecResult(output="", exit_code=-1, error=f"timeout must be positive, got {timeout}")
        box = await self._container(task_id)
        argv = self.engine.argv("exec", *(["-i"] if stdin is not None else []), box.cid, "/bin/sh", "-c")
        argv += [_EXEC_WRAPPER, "hermes_env", self.workspace, f"{timeout:.3f}", command]
        started = time.monotonic()
        result = await run_process(
            argv,
            cwd="/",
            env=self.engine.env,
            timeout=timeout + _ENGINE_GRACE_S,
            stdin=stdin,
            max_output_bytes=self.max_output_bytes,
            kill_output_bytes=self.kill_output_bytes,
        )
        elapsed = time.monotonic() - started
        code = result.exit_code
        if result.timed_out:  # the engine's client itself hung
            state = await self.engine.state(box.cid)
            if not state.running:
                raise await self._lost(task_id, box, "during a call")
            return ExecResult(
                output=result.output,
                exit_code=code,
                timed_out=True,
                truncated=result.truncated,
                error=f"{self.engine.name} exec did not return within {timeout + _ENGINE_GRACE_S:g}s",
            )
        timed_out = code in (124, 137) and elapsed >= timeout
        if code in _SUSPECT_EXIT or code < 0:
            if box.removed:
                return ExecResult(
                    output=result.output, exit_code=code, error=f"task {task_id!r} was cleaned up while this call ran"
                )
            state = await self.engine.state(box.cid)
            if not state.running:
                raise await self._lost(task_id, box, "during a call")
            if code == 137 and not timed_out:
                kills = await self._oom_kills(box)
                if kills > box.oom_kills:
                    box.oom_kills = kills
                    box.lost = (
                        f"a command of task {task_id!r} was killed by the out-of-memory killer: the container's "
                        f"memory limit is {self.memory_mb} MiB (the backend option memory_mb)"
                    )
                    await self.engine.remove(box.cid)
                    raise ContainerLostError(box.lost)
        output = result.output
        if timed_out:
            output += f"\n[timed out after {timeout:g}s; the command and its child processes were killed]"
        return ExecResult(output=output, exit_code=code, timed_out=timed_out, truncated=result.truncated)

    # -- files --------------------------------------------------------------------------------------------------------
    async def _file_op(self, task_id: str, op: str, path: str, *, data: bytes | None = None) -> bytes:
        rel = workspace_relative(path, (self.workspace,))
        if op == "write" and str(rel) == ".":
            raise IsADirectoryError(f"{path!r} is the workspace directory, not a file")
        box = await self._container(task_id)
        limit = str(self.max_file_bytes + 1)
        result = await self.engine.run(
            "exec", *(["-i"] if data is not None else []), box.cid, "/bin/sh", "-c", _FILE_HELPER,
            "hermes_env", op, self.workspace, str(rel), limit,
            input=data, check=False, timeout=self.start_timeout_s,
        )  # fmt: skip
        if result.returncode == 0:
            return result.stdout
        known = _FILE_ERRORS.get(result.returncode)
        if known is not None:
            raise known[0](f"{path!r} {known[1]}")
        state = await self.engine.state(box.cid)
        if not state.running:
            raise await self._lost(task_id, box, f"during {op}_file")
        raise OSError(f"{op}_file {path!r} failed in the container (exit {result.returncode}): {result.err[-300:]}")

    async def read_file(self, task_id: str, path: str) -> bytes:
        data = await self._file_op(task_id, "read", path)
        if len(data) > self.max_file_bytes:
            raise ValueError(f"{path!r} is larger than the backend's file limit ({self.max_file_bytes} bytes)")
        return data

    async def write_file(self, task_id: str, path: str, data: bytes) -> None:
        if not isinstance(data, bytes | bytearray | memoryview):
            raise TypeError(f"data must be bytes, got {type(data).__name__}")
        if len(data) > self.max_file_bytes:
            raise ValueError(f"refusing to write {len(data)} bytes: the file limit is {self.max_file_bytes}")
        await self._file_op(task_id, "write", path, data=bytes(data))

    async def list_files(self, task_id: str, path: str = ".") -> list[str]:
        raw = await self._file_op(task_id, "list", path)
        root, *found = [p.decode("utf-8", "surrogateescape") for p in raw.split(b"\0") if p]
        prefix = root.rstrip("/") + "/"
        return sorted(p[len(prefix) :] for p in found if p.startswith(prefix))

