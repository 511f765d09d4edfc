"""Per-workspace disk quotas: each workspace is a tmpfs of the quota's size.

RLIMIT_FSIZE caps one file, not a workspace (four 250 MB files filled 1.3 GB of one slot); the
filesystems here carry no user or project quotas, and loop-mounted images need loop devices and
``mkfs`` per workspace. A tmpfs mounted with ``size=`` is refused past its size with ENOSPC, for
commands and host-side writes alike, and resetting a workspace is one unmount. It needs
CAP_SYS_ADMIN (root); as an ordinary user workspaces are plain directories and only each file is
capped. tmpfs pages are memory: a quota bounds the RAM (or swap) a workspace can hold, and
``nr_inodes`` bounds its file count (one inode per 4 KiB of quota).

Sandbox workers mount their slots' workspaces inside a mount namespace of their own
(:func:`private_mount_namespace`), so the mounts disappear with the worker however it ends.
The ``bwrap`` backend mounts in the host's namespace; what a killed run leaves mounted is
unmounted by the next run's sweep (``hermes_env.isolation.roots``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import logging
import os
import tempfile
from pathlib import Path

from hermes_env.isolation.users import SandboxUser

log = logging.getLogger(__name__)

_MS_REC = 0x4000
_MS_PRIVATE = 1 << 18
_MNT_DETACH = 2
_CLONE_NEWNS = 0x00020000
_FSTYPE = b"tmpfs"
_SOURCE = b"hermes-workspace"


@functools.lru_cache(maxsize=1)
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def mount_workspace(path: Path, size_bytes: int, user: SandboxUser) -> None:
    """Mount an empty tmpfs of ``size_bytes`` at ``path`` (created), owned by ``user``, mode 0700."""
    path.mkdir(parents=True, exist_ok=True)
    uid, gid = user.owner or (os.getuid(), os.getgid())
    options = f"size={int(size_bytes)},nr_inodes={max(1024, int(size_bytes) // 4096)},mode=0700,uid={uid},gid={gid}"
    _check(
        _libc().mount(_SOURCE, os.fsencode(path), _FSTYPE, 0, options.encode()),
        f"mounting a {size_bytes}-byte tmpfs at {path}",
    )


def unmount(path: Path) -> None:
    """Detach the mount at ``path`` (lazily: processes still inside keep it until they leave); no-op if none."""
    if not is_mount(path):
        return
    _check(_libc().umount2(os.fsencode(path), _MNT_DETACH), f"unmounting {path}")


def mounts_under(root: Path) -> list[Path]:
    """Mount points at or below ``root`` in this mount namespace, deepest first."""
    prefix = str(root).rstrip("/") + "/"
    found = []
    try:
        with open("/proc/self/mountinfo", "rb") as f:
            for line in f:
                point = line.split()[4].decode().replace("\\040", " ")
                if point == prefix[:-1] or point.startswith(prefix):
                    found.append(Path(point))
    except OSError:
        return []
    return sorted(set(found), key=lambda p: -len(p.parts))


def is_mount(path: Path) -> bool:
    return Path(os.path.realpath(path)) in mounts_under(Path(os.path.realpath(path)))


def private_mount_namespace() -> bool:
    """Move this (single-threaded) process into a mount namespace of its own whose mounts never reach the
    host's; True on success. Call before starting threads."""
    try:
        _check(_libc().unshare(_CLONE_NEWNS), "unshare(CLONE_NEWNS)")
        _check(_libc().mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None), "making / private")
    except OSError as exc:
        log.warning("no private mount namespace (%s); workspace quotas are off", exc)
        return False
    return True


@functools.lru_cache(maxsize=1)
def quota_problem() -> str | None:
    """None when :func:`mount_workspace` works here, else why workspaces cannot have quotas (checked once)."""
    if os.geteuid() != 0:
        return "per-workspace disk quotas need root (each workspace is a size-limited tmpfs)"
    probe = Path(tempfile.mkdtemp(prefix="hermes-quota-probe-"))
    try:
        mount_workspace(probe, 1024 * 1024, SandboxUser())
        unmount(probe)
    except OSError as exc:
        return f"cannot mount a tmpfs for a workspace quota ({exc}); run with CAP_SYS_ADMIN or set disk_bytes to null"
    finally:
        probe.rmdir()
    return None
