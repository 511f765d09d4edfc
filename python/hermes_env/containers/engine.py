"""A Docker-compatible container engine, driven through its command line (``docker`` or ``podman``).

Both engines accept the same commands for everything used here (``run``, ``exec``, ``rm``, ``inspect``,
``build``, ``import``, ``ps``), so one client serves both; where they differ (``rm -t``) the client says so.

Ownership: every container this project starts carries the label ``hermes_env`` (its role as value) and
``hermes_env.owner`` = ``host:boot-id:pid:start-time`` of the process that started it. That lets
:func:`sweep_leftovers` remove exactly the containers whose owner is gone (a run killed with SIGKILL),
never those of a live run beside it, and lets the reaper (:func:`ensure_reaper`) remove this process's
containers however it ends: it is a small process that waits for this one's end of a pipe to close.

The engine's own configuration (runtime, default ulimits) is not set here: ``scripts/setup.sh`` writes it
(see :mod:`hermes_env.containers.config`), and the client only points podman at that file.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from hermes_env.containers.config import engine_environment
from hermes_env.errors import ContainerError, EngineCommandError, EngineUnavailableError

LABEL = "hermes_env"
OWNER_LABEL = "hermes_env.owner"
ENGINE_ENV = "HERMES_CONTAINER_ENGINE"
#: Engines tried, in order, when neither an option nor ``HERMES_CONTAINER_ENGINE`` names one.
ENGINE_CANDIDATES = ("docker", "podman")
_CLI_TIMEOUT_S = 120.0

EngineKind = Literal["docker", "podman"]


@dataclass(frozen=True, slots=True)
class CliResult:
    returncode: int
    stdout: bytes
    stderr: bytes

    @property
    def text(self) -> str:
        return self.stdout.decode("utf-8", "replace")

    @property
    def err(self) -> str:
        return self.stderr.decode("utf-8", "replace").strip()


@dataclass(frozen=True, slots=True)
class ContainerState:
    """What the engine says about a container: gone, running, or exited (with why)."""

    exists: bool
    running: bool = False
    status: str = "missing"
    exit_code: int | None = None
    oom_killed: bool = False
    error: str = ""

    def describe(self) -> str:
        if not self.exists:
            return "it no longer exists (removed by someone else or by the engine)"
        if self.running:
            return "it is running"
        parts = [f"it is {self.status}"]
        if self.exit_code is not None:
            parts.append(f"exit code {self.exit_code}")
        if self.oom_killed:
            parts.append("killed for exceeding its memory limit")
        if self.error:
            parts.append(self.error)
        return ", ".join(parts)


def _tail(text: str, limit: int = 1500) -> str:
    text = text.strip()
    return text if len(text) <= limit else "..." + text[-limit:]


# -- ownership --------------------------------------------------------------------------------------------------------


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return "unknown-boot"


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat), None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses; fields after it follow the last ')'.
    fields = stat.rsplit(b")", 1)[-1].split()
    return fields[19].decode() if len(fields) > 19 else None


@functools.lru_cache(maxsize=1)
def _host_and_boot() -> tuple[str, str]:
    return socket.gethostname(), _boot_id()


def owner_token(pid: int | None = None) -> str:
    """``host:boot-id:pid:start-time`` of a process (this one by default): unique while it lives."""
    pid = os.getpid() if pid is None else pid
    host, boot = _host_and_boot()
    return f"{host}:{boot}:{pid}:{_start_time(pid) or 0}"


async def _wait_for_exit(proc: asyncio.subprocess.Process, limit_s: float) -> None:
    """Wait up to ``limit_s`` for ``proc`` to exit, through further cancellations (the caller kills what is left)."""
    deadline = time.monotonic() + max(limit_s, 0.0)
    while proc.returncode is None and time.monotonic() < deadline:
        with contextlib.suppress(asyncio.CancelledError, TimeoutError):
            await asyncio.shield(asyncio.wait_for(proc.wait(), max(deadline - time.monotonic(), 0.0)))


def sandbox_run_args(
    name: str, role: str, *, memory_mib: int, max_processes: int, cpus: float, allow_network: bool
) -> list[str]:
    """The ``run`` options every container this project starts has: its name, the ``hermes_env`` label (``role``
    says what it is) and this run's owner token (for the reaper and the sweep), the hostname ``sandbox``, a memory
    limit without swap, a pids and a CPU limit, and no network unless ``allow_network``."""
    args = [
        "--name", name,
        "--label", f"{LABEL}={role}",
        "--label", f"{OWNER_LABEL}={owner_token()}",
        "--hostname", "sandbox",
        "--memory", f"{memory_mib}m", "--memory-swap", f"{memory_mib}m",
        "--pids-limit", str(max_processes),
        "--cpus", f"{cpus:g}",
    ]  # fmt: skip
    if not allow_network:
        args += ["--network", "none"]
    return args


def owner_alive(token: str) -> bool | None:
    """Whether the process named by an owner token still runs; None when it belongs to another host."""
    parts = token.split(":")
    if len(parts) != 4 or not parts[2].isdigit():
        return False  # not a token we write: treat as dead (it is labelled hermes_env, so it is ours)
    host, boot, pid, started = parts
    my_host, my_boot = _host_and_boot()
    if host != my_host:
        return None
    if boot != my_boot:
        return False
    return _start_time(int(pid)) == started


# -- the engine -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ContainerEngine:
    """One engine program (absolute path), its kind, and the environment its commands run with."""

    program: str
    kind: EngineKind
    env: Mapping[str, str]

    @property
    def name(self) -> str:
        return self.kind

    def argv(self, *args: str) -> list[str]:
        return [self.program, *args]

    def force_remove_args(self) -> list[str]:
        """``rm`` arguments that kill and remove at once (podman would otherwise wait its stop timeout)."""
        return ["rm", "--force", "--ignore", "--time", "0"] if self.kind == "podman" else ["rm", "--force"]

    # -- running engine commands ------------------------------------------------------------------------------------
    def run_sync(
        self, *args: str, timeout: float = _CLI_TIMEOUT_S, input: bytes | None = None, check: bool = True
    ) -> CliResult:
        """Run one engine command to completion (for set-up, sweeps and exit handlers)."""
        try:
            proc = subprocess.run(
                self.argv(*args), input=input, capture_output=True, timeout=timeout, env=dict(self.env), check=False
            )
        except subprocess.TimeoutExpired as exc:
            raise EngineCommandError(f"`{self.kind} {args[0]}` did not finish within {timeout:g}s") from exc
        except OSError as exc:
            raise EngineUnavailableError(f"cannot run {self.program!r}: {exc}") from exc
        return self._checked(args, CliResult(proc.returncode, proc.stdout, proc.stderr), check)

    async def run(
        self,
        *args: str,
        timeout: float = _CLI_TIMEOUT_S,
        input: bytes | None = None,
        check: bool = True,
        cwd: str | os.PathLike[str] | None = None,
        finish_on_cancel: bool = False,
    ) -> CliResult:
        """Run one engine command without blocking the event loop; killed (and an error) past ``timeout``.

        ``cwd``: podman's container monitor (conmon) inherits it from ``run`` and writes files there (an ``oom``
        marker when the container's memory limit is hit), so ``run`` gets a directory of the caller's.

        ``finish_on_cancel``: a cancelled call lets the command run to its end (within ``timeout``) before the
        cancellation goes on, for commands that must not die half-way. podman killed between its runtime's
        ``create`` and its own database write leaves a container no engine command lists, whose monitor and
        ``runc init`` wait forever.
        """
        started = time.monotonic()
        try:
            proc = await asyncio.create_subprocess_exec(
                *self.argv(*args),
                cwd=cwd,
                stdin=asyncio.subprocess.PIPE if input is not None else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=dict(self.env),
                start_new_session=True,  # a Ctrl-C in the terminal reaches us, not the engine's client
            )
        except OSError as exc:
            raise EngineUnavailableError(f"cannot run {self.program!r}: {exc}") from exc
        try:
            stdout, stderr = await asyncio.wait_for(proc.communicate(input), timeout)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
            raise EngineCommandError(f"`{self.kind} {args[0]}` did not finish within {timeout:g}s") from None
        except asyncio.CancelledError:
            if finish_on_cancel:
                await _wait_for_exit(proc, timeout - (time.monotonic() - started))
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await asyncio.shield(proc.wait())
            raise
        returncode = proc.returncode if proc.returncode is not None else -1
        return self._checked(args, CliResult(returncode, stdout, stderr), check)

    def _checked(self, args: Sequence[str], result: CliResult, check: bool) -> CliResult:
        if check and result.returncode != 0:
            raise EngineCommandError(
                f"`{self.kind} {' '.join(args[:2])}` failed (exit {result.returncode}): {_tail(result.err)}",
                returncode=result.returncode,
                output=result.err,
            )
        return result

    # -- queries ----------------------------------------------------------------------------------------------------
    def problem(self) -> str | None:
        """Why this engine cannot run containers now (client without a reachable daemon...), or None."""
        if self.kind == "docker":
            args = ("version", "--format", "{{.Server.Version}}")
        else:
            args = ("info", "--format", "{{.Host.OCIRuntime.Name}}")
        try:
            result = self.run_sync(*args, timeout=20, check=False)
        except ContainerError as exc:
            return str(exc)
        if result.returncode != 0 or not result.text.strip():
            return f"`{self.kind} {args[0]}` failed: {_tail(result.err or result.text, 300) or 'no output'}"
        return None

    async def image_id(self, ref: str) -> str | None:
        """The local image's id, or None when the engine has no image by that name."""
        result = await self.run("image", "inspect", "--format", "{{.Id}}", ref, check=False, timeout=60)
        return result.text.strip() or None if result.returncode == 0 else None

    def image_id_sync(self, ref: str) -> str | None:
        result = self.run_sync("image", "inspect", "--format", "{{.Id}}", ref, check=False, timeout=60)
        return result.text.strip() or None if result.returncode == 0 else None

    async def state(self, container: str) -> ContainerState:
        fmt = "{{json .State}}"
        result = await self.run("inspect", "--type", "container", "--format", fmt, container, check=False, timeout=60)
        if result.returncode != 0:
            return ContainerState(exists=False)
        try:
            raw = json.loads(result.text)
        except json.JSONDecodeError:
            return ContainerState(exists=True, status="unknown", error=_tail(result.text, 200))
        return ContainerState(
            exists=True,
            running=bool(raw.get("Running")),
            status=str(raw.get("Status", "unknown")),
            exit_code=raw.get("ExitCode"),
            oom_killed=bool(raw.get("OOMKilled")),
            error=str(raw.get("Error") or ""),
        )

    def labelled(self, label: str = LABEL) -> list[tuple[str, str]]:
        """``(id, owner token)`` of every container carrying ``label`` (any state)."""
        ids = self.run_sync("ps", "-aq", "--no-trunc", "--filter", f"label={label}", timeout=60).text.split()
        if not ids:
            return []
        fmt = '{{.Id}} {{index .Config.Labels "' + OWNER_LABEL + '"}}'
        result = self.run_sync("inspect", "--type", "container", "--format", fmt, *ids, check=False, timeout=60)
        out = []
        for line in result.text.splitlines():
            cid, _, owner = line.partition(" ")
            if cid:
                out.append((cid, owner.strip()))
        return out

    def remove_sync(self, containers: Sequence[str]) -> None:
        if containers:
            self.run_sync(*self.force_remove_args(), *containers, check=False, timeout=_CLI_TIMEOUT_S)

    async def remove(self, *containers: str) -> None:
        """Kill and remove containers; a container already gone is not an error."""
        if containers:
            await self.run(*self.force_remove_args(), *containers, check=False)


def engine_kind(program: str) -> EngineKind:
    """docker or podman, from the program's ``--version`` (``docker`` may be podman's compatibility shim)."""
    try:
        out = subprocess.run([program, "--version"], capture_output=True, timeout=20, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        out = b""
    return "podman" if b"podman" in out.lower() or os.path.basename(program).startswith("podman") else "docker"


def make_engine(program: str) -> ContainerEngine:
    """A client for the engine at ``program`` (a name on PATH or a path); no probing."""
    path = shutil.which(program)
    if path is None:
        raise EngineUnavailableError(f"container engine {program!r} is not installed (not on PATH)")
    kind = engine_kind(path)
    return ContainerEngine(program=path, kind=kind, env=engine_environment(kind))


@functools.lru_cache(maxsize=8)
def detect_engine(preference: str | None = None) -> ContainerEngine:
    """The first engine that can run containers: ``preference``, else ``$HERMES_CONTAINER_ENGINE``, else docker
    then podman. A client that cannot reach its engine (a ``docker`` CLI with no daemon) is skipped."""
    chosen = preference or os.environ.get(ENGINE_ENV) or None
    candidates = (chosen,) if chosen else ENGINE_CANDIDATES
    problems = []
    for name in candidates:
        try:
            engine = make_engine(name)
        except EngineUnavailableError as exc:
            problems.append(str(exc))
            continue
        problem = engine.problem()
        if problem is None:
            return engine
        problems.append(f"{name} ({engine.program}) cannot run containers: {problem}")
    raise EngineUnavailableError(
        "no container engine is usable: "
        + "; ".join(problems)
        + ". Install podman (Debian/Ubuntu: run scripts/setup.sh as root, or apt-get install podman runc) "
        "or start a Docker engine, or name one with the engine option / $" + ENGINE_ENV
    )


# -- leftovers --------------------------------------------------------------------------------------------------------


def sweep_leftovers(engine: ContainerEngine) -> list[str]:
    """Remove containers labelled ``hermes_env`` whose owning process (on this host) has ended; their ids."""
    dead = [cid for cid, owner in engine.labelled() if owner_alive(owner) is False]
    engine.remove_sync(dead)
    return dead


# $0: the engine program; $1 $2: owner label and token; the rest: the engine's force-remove arguments.
_REAPER_SCRIPT = """
label=$1; owner=$2; shift 2
cat >/dev/null
ids=$("$0" ps -aq --filter "label=$label=$owner")
[ -z "$ids" ] || "$0" "$@" $ids >/dev/null 2>&1
"""


class _Reaper:
    """A process that waits for this one to end (however it ends: return, exception, SIGTERM, SIGKILL), then
    removes the containers it owned. It reads a pipe whose only write end this process holds; end-of-file is the
    signal. Spawned without a ``Popen`` object: it is meant to outlive this process, not to be waited for."""

    def __init__(self) -> None:
        self._running: dict[str, tuple[int, int]] = {}  # engine program -> (pid, write end of its pipe)

    def ensure(self, engine: ContainerEngine) -> None:
        known = self._running.get(engine.program)
        if known is not None and _start_time(known[0]) is not None:
            return
        read_end, write_end = os.pipe()  # both close-on-exec: no other child of ours keeps the write end
        argv = ["/bin/sh", "-c", _REAPER_SCRIPT, engine.program, OWNER_LABEL, owner_token()]
        argv += engine.force_remove_args()
        try:
            pid = os.posix_spawn(
                "/bin/sh",
                argv,
                dict(engine.env),
                file_actions=[
                    (os.POSIX_SPAWN_DUP2, read_end, 0),
                    (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                    (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
                ],
                setsid=True,  # Ctrl-C in the terminal must not stop it before it has cleaned up
            )
        finally:
            os.close(read_end)
        if known is not None:
            os.close(known[1])
        self._running[engine.program] = (pid, write_end)


_REAPER = _Reaper()


def ensure_reaper(engine: ContainerEngine) -> None:
    """Start (once per process and engine) the process that removes this process's containers after it ends."""
    _REAPER.ensure(engine)
