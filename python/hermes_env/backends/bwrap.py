"""``bwrap`` backend: every command runs in a fresh bubblewrap sandbox over the task's workspace.

What a command sees:
- the host's ``/usr`` (and the ``/bin``, ``/lib*`` links into it) read-only, a minimal
  read-only ``/etc`` (alternatives, passwd/group, ld.so cache, certificates);
- the task's workspace read-write at ``/workspace`` (its cwd and ``HOME``), an empty tmpfs
  ``/tmp`` (not kept between calls), a fresh ``/proc`` and minimal ``/dev``;
- new user, PID, IPC, UTS, cgroup and network namespaces (``--unshare-all``): no network,
  not even loopback to the host, unless ``allow_network``; no capabilities;
- resource limits set by ``prlimit`` inside the sandbox: CPU seconds, address space, number of
  processes (a fork bomb hits it), largest file written; output size is bounded by the reader.

When this process runs as root, commands run as an unprivileged uid (``sandbox_uid``, default
65534) because the kernel exempts root from the process-count limit; workspace files written
from the host are chowned to that uid so commands can modify them.

Killing the ``bwrap`` process (timeout, cleanup) tears down the PID namespace, so nothing a
command started survives it (``--die-with-parent`` covers the case of this process dying).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path

from hermes_env.backends.base import ExecResult
from hermes_env.backends.process import run_process
from hermes_env.backends.workspace import HostWorkspaceBackend

# /etc entries programs commonly need; bound read-only when they exist on the host.
_ETC_ENTRIES = (
    "alternatives",
    "passwd",
    "group",
    "nsswitch.conf",
    "hosts",
    "host.conf",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "ssl",
    "ca-certificates",
    "ca-certificates.conf",
    "mime.types",
    "bash.bashrc",
    "profile",
    "inputrc",
    "python3",
    "python3.11",
    "python3.12",
    "magic",
    "magic.mime",
    "gitconfig",
)


class BackendUnavailableError(RuntimeError):
    """The backend cannot run on this machine (missing program, kernel feature)."""


@functools.lru_cache(maxsize=1)
def bwrap_problem() -> str | None:
    """Why bubblewrap cannot sandbox commands here, or ``None`` when it works (checked once)."""
    exe = shutil.which("bwrap")
    if exe is None:
        return "the 'bwrap' program is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    argv = _privilege_drop(65534) + [
        exe,
        "--ro-bind",
        "/usr",
        "/usr",
        *_root_links(),
        "--unshare-all",
        "--die-with-parent",
        "--",
        "/usr/bin/true",
    ]
    try:
        proc = subprocess.run(argv, capture_output=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap could not be started: {exc}"
    if proc.returncode != 0:
        return (
            f"bwrap failed a smoke test (exit {proc.returncode}): {proc.stderr.decode(errors='replace').strip()}; "
            "unprivileged user namespaces may be disabled (sysctl kernel.unprivileged_userns_clone=1 or "
            "user.max_user_namespaces > 0)"
        )
    return None


def _privilege_drop(uid: int, gid: int | None = None) -> list[str]:
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return []
    return [setpriv, f"--reuid={uid}", f"--regid={gid if gid is not None else uid}", "--clear-groups", "--"]


def system_ro_mounts() -> list[str]:
    """bwrap arguments for the read-only system view every sandbox gets: /usr, the /bin-style links
    into it, and only the /etc entries programs need (no shadow, no host secrets)."""
    args = ["--ro-bind", "/usr", "/usr", *_root_links()]
    for entry in _ETC_ENTRIES:
        args += ["--ro-bind-try", f"/etc/{entry}", f"/etc/{entry}"]
    return args


def _root_links() -> list[str]:
    """Recreate /bin, /sbin, /lib* as on the host: symlinks into /usr (merged-usr) or read-only binds."""
    args: list[str] = []
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        host = Path("/") / name
        if host.is_symlink():
            args += ["--symlink", os.readlink(host), f"/{name}"]
        elif host.is_dir():
            args += ["--ro-bind", str(host), f"/{name}"]
    return args


def _first_untraversable(path: Path, uid: int, gid: int) -> Path | None:
    """The first directory on ``path`` (ancestors included) that ``uid`` cannot search."""
    for candidate in [*reversed(path.parents), path]:
        st = candidate.stat()
        if st.st_uid == uid:
            bit = 0o100
        elif st.st_gid == gid:
            bit = 0o010
        else:
            bit = 0o001
        if not st.st_mode & bit:
            return candidate
    return None


class BwrapBackend(HostWorkspaceBackend):
    name = "bwrap"

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        *,
        allow_network: bool = False,
        workspace_mount: str = "/workspace",
        cpu_seconds: int = 120,
        memory_bytes: int = 4 * 1024**3,
        max_processes: int = 256,
        max_file_bytes_written: int = 512 * 1024 * 1024,
        sandbox_uid: int = 65534,
        sandbox_gid: int = 65534,
        extra_ro_binds: dict[str, str] | None = None,
        env: dict[str, str] | None = None,
        **kwargs: int,
    ) -> None:
        problem = bwrap_problem()
        if problem is not None:
            raise BackendUnavailableError(f"bwrap backend unavailable: {problem}")
        if not workspace_mount.startswith("/") or workspace_mount.rstrip("/") in ("", "/usr", "/etc", "/proc", "/dev"):
            raise ValueError(f"workspace_mount must be an absolute path outside system dirs, got {workspace_mount!r}")
        for label, value in (
            ("cpu_seconds", cpu_seconds),
            ("memory_bytes", memory_bytes),
            ("max_processes", max_processes),
            ("max_file_bytes_written", max_file_bytes_written),
        ):
            if value <= 0:
                raise ValueError(f"{label} must be positive, got {value}")
        super().__init__(root, **kwargs)
        self.allow_network = allow_network
        self.workspace_mount = workspace_mount.rstrip("/")
        self.cpu_seconds = cpu_seconds
        self.memory_bytes = memory_bytes
        self.max_processes = max_processes
        self.max_file_bytes_written = max_file_bytes_written
        self.extra_ro_binds = dict(extra_ro_binds or {})
        self.extra_env = dict(env or {})
        self._as_root = os.geteuid() == 0 and shutil.which("setpriv") is not None
        self._uid, self._gid = sandbox_uid, sandbox_gid
        self._bwrap = shutil.which("bwrap") or "bwrap"
        self._shell = "/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh"
        if self._as_root:
            # mkdtemp makes 0700 dirs; the unprivileged sandbox uid must be able to traverse the root.
            self.root.chmod(0o711)
            blocked = _first_untraversable(self.root, self._uid, self._gid)
            if blocked is not None:
                raise ValueError(
                    f"bwrap root {str(self.root)!r} is not reachable by the sandbox uid {self._uid}: "
                    f"{str(blocked)!r} has no search permission for it (mode {blocked.stat().st_mode & 0o777:o}); "
                    "use a root under a world-traversable directory such as /tmp, or chmod o+x that directory"
                )

    @classmethod
    def is_available(cls) -> bool:
        return bwrap_problem() is None

    def visible_roots(self, task_id: str) -> tuple[str, ...]:
        return (self.workspace_mount,)

    def _file_owner(self) -> tuple[int, int] | None:
        return (self._uid, self._gid) if self._as_root else None

    def _prepare_workspace(self, path: Path) -> None:
        if self._as_root:
            os.chown(path, self._uid, self._gid)

    def build_argv(self, task_id: str, command: str) -> list[str]:
        """The full command line for one sandboxed command (public for inspection and tests)."""
        ws = str(self.workspace_path(task_id))
        argv = _privilege_drop(self._uid, self._gid) if self._as_root else []
        argv += [self._bwrap, *system_ro_mounts()]
        if self.allow_network:
            argv += ["--ro-bind-try", "/etc/resolv.conf", "/etc/resolv.conf"]
        for host, inside in self.extra_ro_binds.items():
            argv += ["--ro-bind", host, inside]
        argv += [
            "--proc", "/proc",
            "--dev", "/dev",
            "--tmpfs", "/tmp",
            "--bind", ws, self.workspace_mount,
            "--chdir", self.workspace_mount,
            "--unshare-all",
            "--hostname", "sandbox",
            "--die-with-parent",
            "--new-session",
            "--clearenv",
        ]  # fmt: skip
        if self.allow_network:
            argv.append("--share-net")
        env = {
            "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": self.workspace_mount,
            "TMPDIR": "/tmp",
            "LANG": "C.UTF-8",
            "TERM": "dumb",
            "PYTHONDONTWRITEBYTECODE": "1",
            **self.extra_env,
        }
        for key, value in env.items():
            argv += ["--setenv", key, value]
        argv += [
            "--",
            "/usr/bin/prlimit",
            f"--cpu={self.cpu_seconds}",
            f"--as={self.memory_bytes}",
            f"--nproc={self.max_processes}",
            f"--fsize={self.max_file_bytes_written}",
            "--core=0",
            "--",
            self._shell,
            "-c",
            command,
        ]
        return argv

    async def execute(self, task_id: str, command: str, timeout: float, *, stdin: str | None = None) -> ExecResult:
        await self.start(task_id)
        result = await run_process(
            self.build_argv(task_id, command),
            cwd=str(self.workspace_path(task_id)),
            env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
            timeout=timeout,
            stdin=stdin,
            max_output_bytes=self.max_output_bytes,
            kill_output_bytes=self.kill_output_bytes,
            running=self.running_set(task_id),
        )
        if result.exit_code != 0 and result.output.startswith("bwrap:"):
            # bwrap itself failed (bad bind, namespace setup): a backend error, not the command's.
            return ExecResult(output=result.output, exit_code=result.exit_code, error=result.output.strip())
        return result

    def describe(self) -> str:
        return (
            f"bwrap(workspace={self.workspace_mount}, network={'on' if self.allow_network else 'off'}, "
            f"cpu={self.cpu_seconds}s, as={self.memory_bytes}, nproc={self.max_processes}, "
            f"uid={self._uid if self._as_root else os.geteuid()})"
        )
