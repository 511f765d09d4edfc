"""Building the bubblewrap command line that isolates one call, and the limits around it.

The sandbox sees a fresh root made of read-only system directories (``/usr``, ``/etc``, the
``/bin``-style links), a private ``/tmp``, its own ``/proc`` and ``/dev``, and exactly one
writable directory: the slot's workspace at ``/workspace``. It runs in new user, PID, IPC and
UTS namespaces and, unless the policy allows the network, a new network namespace holding
only its own loopback (so even 127.0.0.1 services of the host are unreachable).

Process limits need a real unprivileged user: the kernel never applies RLIMIT_NPROC to uid 0,
so when the worker runs as root each slot gets its own uid (``slot_uid``) and its commands
run as that user. The count is then per slot, and one slot's fork bomb cannot starve another.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from hermes_env.backends.bwrap import system_ro_mounts  # shared with the bwrap backend
from hermes_env.sandbox.config import ResourceLimits, SandboxPolicy

SANDBOX_WORKDIR = "/workspace"
SANDBOX_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# First uid handed to slots when the worker runs as root; far above normal login users.
SLOT_UID_BASE = 200_000
UID_BLOCK = 8192  # slots one pool can have at once (uids wrap around within its block)
MAX_UID_BLOCKS = 4096


class SandboxUnavailableError(RuntimeError):
    """bubblewrap is missing or cannot create namespaces here, and the policy requires isolation."""


@dataclass(frozen=True, slots=True)
class SlotIdentity:
    """The Unix user a slot's commands run as (None: the worker's own user)."""

    uid: int | None
    gid: int | None


def slot_identity(worker_index: int, slot: int, slots_per_worker: int, uid_base: int = SLOT_UID_BASE) -> SlotIdentity:
    """A distinct uid per slot of the pool when running as root, else the worker's own user."""
    if os.geteuid() != 0:
        return SlotIdentity(None, None)
    uid = uid_base + (worker_index * slots_per_worker + slot) % UID_BLOCK
    return SlotIdentity(uid, uid)


class UidBlock:
    """A range of UID_BLOCK slot uids held by one pool for its lifetime.

    Pools on the same host (two environments, a benchmark beside a training run) must never
    share a slot uid: resetting a slot kills every process of its uid. Each pool claims a block
    with an exclusive ``flock`` on a lock file, released when the pool closes or its process dies.
    """

    def __init__(self, lock_dir: str = "/tmp") -> None:
        self.base = SLOT_UID_BASE
        self._fd: int | None = None
        if os.geteuid() != 0:
            return  # commands run as our own user; there is nothing to share
        for block in range(MAX_UID_BLOCKS):
            fd = os.open(os.path.join(lock_dir, f"hermes-sandbox-uids-{block}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            self._fd = fd
            self.base = SLOT_UID_BASE + block * UID_BLOCK
            return
        raise SandboxUnavailableError(f"all {MAX_UID_BLOCKS} sandbox uid blocks are held by other pools on this host")

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing drops the flock
            self._fd = None


def _system_mounts() -> list[str]:
    # The same read-only system view as the ``bwrap`` terminal backend: /usr, the /bin-style
    # links into it, and only the /etc entries programs need (no shadow, no host secrets).
    args = system_ro_mounts()
    if os.path.isdir("/opt"):
        args += ["--ro-bind", "/opt", "/opt"]
    return args


def bwrap_argv(
    workspace: str | os.PathLike[str],
    command: list[str],
    policy: SandboxPolicy,
    *,
    extra_binds: list[tuple[str, str]] | None = None,
) -> list[str]:
    """argv running ``command`` inside bubblewrap with ``workspace`` as the only writable directory."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxUnavailableError("bubblewrap (bwrap) is not installed; install it (apt install bubblewrap)")
    argv = [
        bwrap,
        "--unshare-user",
        "--unshare-pid",
        # The command itself is the namespace's pid 1. With bwrap's own init in between, bwrap's
        # monitor exits without reaping that init, which lingers as a zombie of the slot's uid and
        # counts against its process limit (RLIMIT_NPROC) until someone reaps it.
        "--as-pid-1",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
        "--hostname",
        "sandbox",
    ]
    if not policy.allow_network:
        argv.append("--unshare-net")
    argv += _system_mounts()
    argv += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/run"]
    for p in policy.ro_paths:  # after the tmpfs mounts, so a path under /tmp is not hidden by them
        argv += ["--ro-bind-try", p, p]
    argv += ["--bind", os.fspath(workspace), SANDBOX_WORKDIR]
    for src, dst in extra_binds or []:
        argv += ["--bind", src, dst]
    argv += ["--chdir", SANDBOX_WORKDIR, "--clearenv"]
    env = {"PATH": SANDBOX_PATH, "HOME": SANDBOX_WORKDIR, "LANG": "C.UTF-8", "TERM": "xterm", "USER": "sandbox"}
    for k, v in env.items():
        argv += ["--setenv", k, v]
    argv += ["--", *command]
    return argv


def limits_prefix(limits: ResourceLimits, *, nproc_offset: int = 0) -> list[str]:
    """``prlimit`` wrapper applying the per-process limits; rlimits are inherited through bwrap's exec."""
    prlimit = shutil.which("prlimit")
    if prlimit is None:
        raise SandboxUnavailableError("prlimit (util-linux) is not installed; it applies the sandbox's resource limits")
    mem = limits.memory_mb * 1024 * 1024
    nproc = limits.max_processes + nproc_offset
    return [
        prlimit,
        f"--cpu={limits.cpu_seconds}",
        f"--as={mem}",
        f"--nproc={nproc}",
        f"--fsize={limits.max_file_bytes}",
        "--core=0",
        "--",
    ]


def user_process_count() -> int:
    """Processes of the current real uid (RLIMIT_NPROC counts them all when slots share the worker's uid)."""
    uid = os.getuid()
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    count += 1
            except OSError:
                continue
    return count


def probe_bwrap(policy: SandboxPolicy, scratch: Path, identity: SlotIdentity) -> str | None:
    """None when bubblewrap works here with this policy, else the reason it does not."""
    scratch.mkdir(parents=True, exist_ok=True)
    if identity.uid is not None:
        os.chown(scratch, identity.uid, identity.gid if identity.gid is not None else -1)
    try:
        argv = bwrap_argv(scratch, ["/bin/sh", "-c", "true"], policy)
    except SandboxUnavailableError as exc:
        return str(exc)
    try:
        proc = subprocess.run(
            argv,
            capture_output=True,
            timeout=30,
            user=identity.uid,
            group=identity.gid,
            extra_groups=[] if identity.uid is not None else None,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bubblewrap failed to start: {exc}"
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip()
        return f"bubblewrap cannot create a sandbox here (exit {proc.returncode}: {err})"
    return None
