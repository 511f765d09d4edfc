"""The bubblewrap sandbox: the one place a ``bwrap`` command line is built, and the check that bwrap works.

What a sandboxed command sees:
- the host's ``/usr`` (and the ``/bin``, ``/lib*`` links into it) and ``/opt`` read-only, a minimal
  read-only ``/etc`` (alternatives, passwd/group, ld.so cache, certificates; no shadow, no host
  secrets), extra read-only paths the environment names;
- its workspace read-write at ``/workspace`` (cwd and ``HOME``), a private size-limited tmpfs
  ``/tmp`` and ``/run`` (not kept between calls), a fresh ``/proc`` and minimal ``/dev``;
- with ``root``, the task's own host directory as ``/`` beneath all of that, so that absolute paths outside
  the system directories (``/tests``, ``/logs/verifier``, ``/app``) are the task's and persist between calls;
- new user, PID, IPC, UTS, cgroup and network namespaces: no network, not even loopback to the
  host's services, unless the policy allows it; no capabilities; a new session (no terminal
  to inject keystrokes into);
- the seccomp filter of ``hermes_env.isolation.seccomp`` (no nested namespaces, keyrings, bpf,
  perf, ptrace, mounts, modules ...). bwrap reads it from a file descriptor: the command line names it
  as :data:`SECCOMP_FD`, which :func:`with_seccomp_fd` replaces with a fresh descriptor's number at
  each start (``hermes_env.isolation.process.spawn`` does so for every sandbox).

The rlimits (``ResourceLimits.prlimit_argv``) wrap the whole command line; which user it runs as is
the caller's choice (``hermes_env.isolation.users``).
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from hermes_env.isolation import seccomp
from hermes_env.isolation.reaper import spawn_guard
from hermes_env.isolation.users import SandboxUser

WORKSPACE_MOUNT = "/workspace"
SANDBOX_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# What bwrap itself runs with (it clears the sandbox's environment and sets its own).
HOST_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
# The sandbox's init (PID 1): runs the command as its child, reaps what gets orphaned inside, exits with the
# command's status (128+N when signal N killed it). bwrap's own init outlives bwrap's monitor, so each call
# left a zombie for the host's init, counted against the task uid's RLIMIT_NPROC until reaped: a slow init
# (a VM agent) turned that into "bwrap: Can't fork for pid 1", and where the trainer is PID 1 of a container
# they would never be reaped. With --as-pid-1 the monitor reaps its own child.
SANDBOX_INIT = ("/bin/sh", "-c", '"$@"; exit $?', "sandbox-init")
# Stands for the seccomp program's file descriptor in a bwrap command line until it is started.
SECCOMP_FD = "{seccomp-fd}"

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
_SYSTEM_DIRS = ("/usr", "/usr/bin", "/usr/lib", "/etc", "/proc", "/dev", "/tmp", "/run", "/opt")


_ROOT_LINK_NAMES = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")

#: Top-level names under which a sandbox sees the host's system directories or per-command private mounts; every
#: other absolute path (but the workspace's) lives in the task's own root directory when it has one.
SYSTEM_TOP_LEVEL = frozenset({"usr", "etc", "proc", "dev", "tmp", "run", "opt", "sys", *_ROOT_LINK_NAMES})


def _root_links(persistent_root: bool = False) -> list[str]:
    """Recreate /bin, /sbin, /lib* as on the host: symlinks into /usr (merged-usr) or read-only binds.

    In a persistent root the symlinks are made once on the host side (:func:`make_root_links`): bwrap
    refuses to create a symlink that already exists.
    """
    args: list[str] = []
    for name in _ROOT_LINK_NAMES:
        host = Path("/") / name
        if host.is_symlink():
            if not persistent_root:
                args += ["--symlink", os.readlink(host), f"/{name}"]
        elif host.is_dir():
            args += ["--ro-bind", str(host), f"/{name}"]
    return args


def make_root_links(root: Path) -> None:
    """The host's /bin, /lib*, ... symlinks inside a task's persistent root directory (idempotent)."""
    for name in _ROOT_LINK_NAMES:
        host = os.path.join("/", name)
        link = os.path.join(root, name)
        if os.path.islink(host) and not os.path.lexists(link):
            os.symlink(os.readlink(host), link)


@functools.lru_cache(maxsize=2)
def _system_mounts(persistent_root: bool = False) -> tuple[str, ...]:
    args = ["--ro-bind", "/usr", "/usr", *_root_links(persistent_root)]
    for entry in _ETC_ENTRIES:
        args += ["--ro-bind-try", f"/etc/{entry}", f"/etc/{entry}"]
    if os.path.isdir("/opt"):
        args += ["--ro-bind", "/opt", "/opt"]
    return tuple(args)


def check_mount_point(mount_point: str) -> str:
    """``mount_point`` without a trailing slash; ValueError unless it is an absolute path outside the system dirs."""
    mount = mount_point.rstrip("/")
    if not mount.startswith("/") or mount in ("", *_SYSTEM_DIRS):
        raise ValueError(
            f"workspace mount {mount_point!r} must be an absolute path outside the system "
            f"directories ({', '.join(_SYSTEM_DIRS)}); use e.g. /workspace"
        )
    return mount


@dataclass(frozen=True)
class BwrapSpec:
    """How one task's commands are sandboxed; :meth:`argv` wraps a command in it."""

    workspace: str  # host directory bound read-write at ``mount_point``
    mount_point: str = WORKSPACE_MOUNT
    allow_network: bool = False
    ro_paths: tuple[str, ...] = ()  # host paths visible read-only at the same place
    ro_binds: tuple[tuple[str, str], ...] = ()  # (host path, path inside) read-only
    binds: tuple[tuple[str, str], ...] = ()  # (host path, path inside) read-write, e.g. a control socket dir
    env: tuple[tuple[str, str], ...] = ()  # added to (or overriding) the sandbox's small environment
    tmp_bytes: int | None = None  # size of the private /tmp and /run; None: the kernel's default
    # Host directory bound read-write at ``/`` beneath the system mounts: absolute paths such as /tests or /app
    # are the task's own and persist between its commands. None: a fresh, empty root for each command.
    root: str | None = None

    def __post_init__(self) -> None:
        check_mount_point(self.mount_point)

    def argv(self, command: Sequence[str]) -> list[str]:
        """The bwrap command line running ``command`` (an argv) in this sandbox."""
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            raise FileNotFoundError("bubblewrap (bwrap) is not installed; install it (apt-get install bubblewrap)")
        mount = self.mount_point.rstrip("/")
        argv = [
            bwrap,
            "--unshare-all",  # user, pid, ipc, uts, cgroup, net
            *(["--share-net"] if self.allow_network else []),
            "--die-with-parent",
            "--new-session",
            "--hostname",
            "sandbox",
            "--seccomp",
            SECCOMP_FD,
            *(["--bind", self.root, "/"] if self.root is not None else []),
            *_system_mounts(self.root is not None),
        ]
        if self.allow_network:
            argv += ["--ro-bind-try", "/etc/resolv.conf", "/etc/resolv.conf"]
        argv += ["--proc", "/proc", "--dev", "/dev"]
        for target in ("/tmp", "/run"):
            if self.tmp_bytes is not None:
                argv += ["--size", str(int(self.tmp_bytes))]
            argv += ["--tmpfs", target]
        for path in self.ro_paths:  # after the tmpfs mounts, so a path under /tmp is not hidden by them
            argv += ["--ro-bind-try", path, path]
        for host, inside in self.ro_binds:
            argv += ["--ro-bind", host, inside]
        argv += ["--bind", self.workspace, mount]
        for host, inside in self.binds:
            argv += ["--bind", host, inside]
        argv += ["--chdir", mount, "--clearenv"]
        env = {
            "PATH": SANDBOX_PATH,
            "HOME": mount,
            "TMPDIR": "/tmp",
            "LANG": "C.UTF-8",
            "TERM": "xterm",
            "USER": "sandbox",
            "PYTHONDONTWRITEBYTECODE": "1",
            **dict(self.env),
        }
        for key, value in env.items():
            argv += ["--setenv", key, value]
        return [*argv, "--as-pid-1", "--", *SANDBOX_INIT, *command]


@contextlib.contextmanager
def with_seccomp_fd(argv: Sequence[str]) -> Iterator[tuple[list[str], tuple[int, ...]]]:
    """``argv`` with its seccomp placeholder replaced by an open descriptor of the filter, and the fds to pass.

    The descriptor is closed on leaving: start the process inside the block, with ``pass_fds``. A command
    line without the placeholder (not a sandbox) comes back as it is.
    """
    argv = list(argv)
    try:
        at = argv.index(SECCOMP_FD)
    except ValueError:
        yield argv, ()
        return
    if at == 0 or argv[at - 1] != "--seccomp":
        raise ValueError(f"{SECCOMP_FD!r} appears in a command line other than as bwrap's --seccomp argument")
    with seccomp.program_fd() as fd:
        argv[at] = str(fd)
        yield argv, (fd,)


def probe(user: SandboxUser | None = None, *, allow_network: bool = False) -> str | None:
    """None when bubblewrap can sandbox a command here as ``user``, else why not (one sentence, with the fix)."""
    if shutil.which("bwrap") is None:
        return "the 'bwrap' program is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    user = user or SandboxUser()
    scratch = Path(tempfile.mkdtemp(prefix="hermes-bwrap-probe-"))
    try:
        scratch.chmod(0o777)
        argv = BwrapSpec(str(scratch), allow_network=allow_network).argv(["/bin/sh", "-c", "true"])
        # spawn_guard: a task user's zombie must wait for subprocess's own waitpid, not go to the reaper.
        with spawn_guard(), with_seccomp_fd(user.argv_prefix() + argv) as (argv, fds):
            proc = subprocess.run(argv, capture_output=True, timeout=30, check=False, env=HOST_ENV, pass_fds=fds)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bwrap could not be started: {exc}"
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip()
        return (
            f"bwrap failed a smoke test (exit {proc.returncode}: {err}); unprivileged user namespaces may be "
            "disabled (sysctl kernel.unprivileged_userns_clone=1 or user.max_user_namespaces > 0)"
        )
    return None


@functools.lru_cache(maxsize=1)
def bwrap_problem() -> str | None:
    """:func:`probe` as an unprivileged user (the one every sandbox here runs as), checked once per process."""
    return probe(SandboxUser(65534, 65534) if os.geteuid() == 0 else None)
