"""File operations confined to one slot's workspace, done by the server on the host side.

Paths are workspace-relative; absolute paths are taken as workspace-rooted (``/workspace/x``,
the path the model sees inside the sandbox, and ``/x`` both mean ``<workspace>/x``). Every
path is resolved with symlinks followed and must stay inside the workspace; the opened file
descriptor is checked again through ``/proc/self/fd`` so a symlink swapped in between the
check and the open cannot redirect the server to a host file.
"""

from __future__ import annotations

import errno
import io
import os
import shutil
import stat
import tarfile
from pathlib import Path

from hermes_env.sandbox.isolation import SANDBOX_WORKDIR, SlotIdentity


class FileTooLargeError(OSError):
    """A file is over the read limit."""


def _relative(path: str) -> str:
    if "\x00" in path:
        raise PermissionError(f"path {path!r} contains a NUL byte")
    p = path.strip() or "."
    if p == SANDBOX_WORKDIR or p.startswith(SANDBOX_WORKDIR + "/"):
        p = p[len(SANDBOX_WORKDIR) :]
    return p.lstrip("/") or "."


def _inside(root: Path, candidate: Path) -> bool:
    return candidate == root or candidate.is_relative_to(root)


def resolve(root: Path, path: str) -> Path:
    """The real path ``path`` names inside ``root``; PermissionError when it resolves outside."""
    real_root = root.resolve()
    target = (real_root / _relative(path)).resolve()
    if not _inside(real_root, target):
        raise PermissionError(f"path {path!r} resolves outside the workspace; use a path inside {SANDBOX_WORKDIR}")
    return target


def _check_fd(real_root: Path, fd: int, path: str) -> None:
    opened = Path(os.readlink(f"/proc/self/fd/{fd}"))
    if not _inside(real_root, opened):
        raise PermissionError(f"path {path!r} was redirected outside the workspace while opening it")


def read_file(root: Path, path: str, max_bytes: int) -> bytes:
    real_root = root.resolve()
    target = resolve(root, path)
    fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        _check_fd(real_root, fd, path)
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(f"{path!r} is a directory; list it with artifacts/list")
        if not stat.S_ISREG(st.st_mode):
            raise PermissionError(f"{path!r} is not a regular file")
        if st.st_size > max_bytes:
            raise FileTooLargeError(f"{path!r} is {st.st_size} bytes, over the {max_bytes}-byte read limit")
        with os.fdopen(os.dup(fd), "rb") as f:
            return f.read(max_bytes + 1)[:max_bytes]
    finally:
        os.close(fd)


def _chown(path: Path, identity: SlotIdentity) -> None:
    if identity.uid is not None:
        os.chown(path, identity.uid, identity.gid if identity.gid is not None else -1, follow_symlinks=False)


def _open_parent(real_root: Path, rel: Path, identity: SlotIdentity, path: str) -> int:
    """A directory fd for ``rel``'s parent, walked from the root one component at a time with
    O_NOFOLLOW (creating missing directories for the slot's user). ``rel`` is already resolved,
    so a symlink met on the way was swapped in after the check: refused, never followed."""
    fd = os.open(real_root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in rel.parts[:-1]:
            try:
                nfd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            except FileNotFoundError:
                os.mkdir(part, 0o755, dir_fd=fd)
                if identity.uid is not None:
                    os.chown(part, identity.uid, identity.gid or -1, dir_fd=fd, follow_symlinks=False)
                nfd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            except (NotADirectoryError, OSError) as exc:
                raise PermissionError(f"{path!r} changed while writing it ({exc.strerror}); retry") from exc
            os.close(fd)
            fd = nfd
    except BaseException:
        os.close(fd)
        raise
    return fd


def write_file(root: Path, path: str, data: bytes, identity: SlotIdentity) -> None:
    real_root = root.resolve()
    target = resolve(root, path)
    if target == real_root:
        raise IsADirectoryError(f"{path!r} names the workspace itself; give a file path")
    rel = target.relative_to(real_root)
    dir_fd = _open_parent(real_root, rel, identity, path)
    try:
        fd = os.open(rel.name, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise PermissionError(f"{path!r} became a symlink while writing it; refused") from exc
        raise
    finally:
        os.close(dir_fd)
    try:
        _check_fd(real_root, fd, path)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise PermissionError(f"{path!r} is not a regular file")
        os.ftruncate(fd, 0)  # only after the checks: never truncate what we should not have opened
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        if identity.uid is not None:
            os.fchown(fd, identity.uid, identity.gid if identity.gid is not None else -1)
    finally:
        os.close(fd)


def list_files(root: Path, path: str = ".") -> list[str]:
    """Workspace-relative paths of regular files under ``path`` (symlinks are not followed)."""
    real_root = root.resolve()
    base = resolve(root, path)
    if base.is_file():
        return [str(base.relative_to(real_root))]
    if not base.is_dir():
        raise FileNotFoundError(f"{path!r} does not exist in the workspace")
    out: list[str] = []
    for dirpath, _dirs, files in os.walk(base, followlinks=False):
        for name in files:
            full = Path(dirpath) / name
            if full.is_file() and not full.is_symlink():
                out.append(str(full.relative_to(real_root)))
    return sorted(out)


def archive(root: Path, path: str, max_bytes: int) -> bytes:
    """A tar.gz of ``path``; symlinks are stored as links, never followed."""
    real_root = root.resolve()
    base = resolve(root, path)
    if not base.exists():
        raise FileNotFoundError(f"{path!r} does not exist in the workspace")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        arcname = "." if base == real_root else str(base.relative_to(real_root))
        tar.add(base, arcname=arcname, recursive=True)
    data = buf.getvalue()
    if len(data) > max_bytes:
        raise FileTooLargeError(f"archive of {path!r} is {len(data)} bytes, over the {max_bytes}-byte limit")
    return data


def reset(root: Path, identity: SlotIdentity) -> None:
    """Empty the workspace (the directory itself stays, owned by the slot's user)."""
    root.mkdir(parents=True, exist_ok=True)
    for entry in os.scandir(root):
        p = Path(entry.path)
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)
    os.chmod(root, 0o755)
    _chown(root, identity)
