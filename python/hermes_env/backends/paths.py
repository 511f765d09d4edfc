"""Workspace path confinement for host-side file methods.

A rollout's commands can create symlinks in its workspace, so a path that looks harmless
(``data/out.txt``) may point anywhere once resolved. Every host-side file operation therefore:

1. maps the model's path onto the workspace (relative paths, or absolute paths which are
   taken as workspace-rooted after stripping the prefix the sandbox sees, e.g. ``/workspace``);
2. resolves symlinks and refuses anything whose real path leaves the workspace;
3. opens the *resolved* path component by component with ``O_NOFOLLOW`` relative to the
   workspace's directory descriptor, so a symlink swapped in between the check and the open
   (a race a concurrently running command could try) makes the open fail instead of escaping.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path, PurePosixPath

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class WorkspacePathError(PermissionError):
    """A path that would leave the task's workspace."""


def workspace_relative(path: str, visible_roots: tuple[str, ...] = ()) -> PurePosixPath:
    """Normalise a model-supplied path to a workspace-relative one (without resolving symlinks).

    ``visible_roots`` are absolute prefixes under which commands see the workspace (``/workspace``
    for bwrap, the real directory for the local backend); they are stripped first. Any other
    absolute path is taken as workspace-rooted. ``..`` that climbs above the root is refused.
    """
    if not isinstance(path, str):
        raise TypeError(f"path must be a string, got {type(path).__name__}")
    if "\x00" in path:
        raise WorkspacePathError(f"path {path!r} contains a NUL byte")
    raw = path.strip() or "."
    if raw.startswith("/"):
        for root in visible_roots:
            root = root.rstrip("/")
            if root and (raw == root or raw.startswith(root + "/")):
                raw = raw[len(root) :] or "/"
                break
        raw = raw.lstrip("/") or "."
    parts: list[str] = []
    for part in PurePosixPath(raw).parts:
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                raise WorkspacePathError(f"path {path!r} escapes the workspace (too many '..')")
            parts.pop()
            continue
        parts.append(part)
    return PurePosixPath(*parts) if parts else PurePosixPath(".")


def resolve_confined(root: Path, path: str, visible_roots: tuple[str, ...] = ()) -> Path:
    """Real path of ``path`` inside ``root``; ``WorkspacePathError`` if its resolution leaves it."""
    real_root = Path(os.path.realpath(root))
    rel = workspace_relative(path, visible_roots)
    candidate = Path(os.path.realpath(real_root / rel))
    if candidate != real_root and real_root not in candidate.parents:
        raise WorkspacePathError(f"path {path!r} resolves outside the workspace (a symlink pointing out?)")
    return candidate


def _open_dir_chain(real_root: Path, rel_parts: tuple[str, ...], *, create: bool, owner: tuple[int, int] | None) -> int:
    """Descriptor of the directory ``real_root/rel_parts`` opened without following any symlink."""
    fd = os.open(real_root, _DIR_FLAGS)
    try:
        for part in rel_parts:
            try:
                nfd = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                try:
                    os.mkdir(part, 0o755, dir_fd=fd)
                    if owner is not None:
                        os.chown(part, owner[0], owner[1], dir_fd=fd, follow_symlinks=False)
                except FileExistsError:
                    pass
                nfd = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise WorkspacePathError(f"{part!r} is not a plain directory inside the workspace") from exc
                raise
            os.close(fd)
            fd = nfd
    except BaseException:
        os.close(fd)
        raise
    return fd


def _split(root: Path, path: str, visible_roots: tuple[str, ...]) -> tuple[Path, tuple[str, ...], str]:
    real_root = Path(os.path.realpath(root))
    target = resolve_confined(real_root, path, visible_roots)
    if target == real_root:
        raise IsADirectoryError(f"{path!r} is the workspace directory, not a file")
    rel = target.relative_to(real_root).parts
    return real_root, rel[:-1], rel[-1]


def _open_file_confined(
    root: Path, path: str, visible_roots: tuple[str, ...], flags: int, owner: tuple[int, int] | None
) -> int:
    """An fd of the file ``path`` under ``root``, opened without following a symlink at any step.

    Parents are created (and chowned to ``owner``) when ``flags`` has ``O_CREAT``.
    """
    real_root, dirs, name = _split(root, path, visible_roots)
    dfd = _open_dir_chain(real_root, dirs, create=bool(flags & os.O_CREAT), owner=owner)
    try:
        return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o644, dir_fd=dfd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise WorkspacePathError(f"{path!r} changed into a symlink while being opened") from exc
        raise
    finally:
        os.close(dfd)


def read_bytes_confined(
    root: Path, path: str, visible_roots: tuple[str, ...] = (), max_bytes: int | None = None
) -> bytes:
    fd = _open_file_confined(root, path, visible_roots, os.O_RDONLY, owner=None)
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(f"{path!r} is a directory")
        if not stat.S_ISREG(st.st_mode):
            raise PermissionError(f"{path!r} is not a regular file (device, fifo or socket)")
        return fh.read() if max_bytes is None else fh.read(max_bytes)


def write_bytes_confined(
    root: Path,
    path: str,
    data: bytes,
    visible_roots: tuple[str, ...] = (),
    owner: tuple[int, int] | None = None,
) -> None:
    """Create or replace a file; parents created. ``owner`` chowns new entries (bwrap's sandbox uid)."""
    fd = _open_file_confined(root, path, visible_roots, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, owner=owner)
    with os.fdopen(fd, "wb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise PermissionError(f"{path!r} is not a regular file")
        if owner is not None:
            os.fchown(fh.fileno(), owner[0], owner[1])
        fh.write(data)


def list_files_confined(root: Path, path: str = ".", visible_roots: tuple[str, ...] = ()) -> list[str]:
    """Sorted workspace-relative paths of regular files under ``path`` (symlinks are not followed or listed)."""
    real_root = Path(os.path.realpath(root))
    start = resolve_confined(real_root, path, visible_roots)
    if start.is_file():
        return [start.relative_to(real_root).as_posix()]
    if not start.is_dir():
        raise FileNotFoundError(f"no such file or directory in the workspace: {path!r}")
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(start, followlinks=False):
        dirnames.sort()
        base = Path(dirpath)
        for fname in filenames:
            full = base / fname
            try:
                st = full.lstat()
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                out.append(full.relative_to(real_root).as_posix())
    out.sort()
    return out
