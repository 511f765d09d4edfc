"""Path confinement: host-side file operations on a task's workspace that cannot be led outside it.

A task's commands can create symlinks in its workspace and swap them in at any time, so a path
that looks harmless (``data/out.txt``) may point anywhere once resolved. Every operation here:

1. maps the path onto the workspace: relative paths, or absolute paths under a prefix at which
   commands see the workspace (``/workspace`` in a sandbox, the real directory for ``local``).
   Any other absolute path (``/tmp/x``, ``/etc/passwd``) is refused: it names a place the task's
   commands see outside their workspace, and quietly writing it into the workspace instead would
   leave the model looking for it where it is not;
2. resolves symlinks and refuses anything whose real path leaves the workspace (a symlink that
   stays inside is fine);
3. opens the *resolved* path one component at a time with ``O_NOFOLLOW`` relative to the
   workspace's directory descriptor, and walks directories (listing, archiving) by descriptor
   too, so a symlink swapped in after the check makes the operation fail instead of escaping.
"""

from __future__ import annotations

import contextlib
import errno
import io
import itertools
import logging
import os
import shutil
import stat
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from hermes_env.errors import FileTooLargeError, WorkspacePathError

log = logging.getLogger(__name__)

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_MAX_DEPTH = 256  # directories nested deeper are not listed or archived

Owner = tuple[int, int] | None


@contextlib.contextmanager
def _errno_as(errnos: tuple[int, ...], error: type[Exception], message: str) -> Iterator[None]:
    """Turn an OSError with one of ``errnos`` into ``error(message)``, chained; other errors pass through."""
    try:
        yield
    except OSError as exc:
        if exc.errno in errnos:
            raise error(message) from exc
        raise


def workspace_relative(path: str, visible_roots: tuple[str, ...] = ()) -> PurePosixPath:
    """A task's path as a workspace-relative one (symlinks not resolved).

    ``visible_roots`` are the absolute prefixes under which commands see the workspace; an absolute
    path elsewhere, and ``..`` climbing above the root, raise :class:`WorkspacePathError`.
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
                raw = raw[len(root) :].lstrip("/") or "."
                break
        else:
            shown = " or ".join(visible_roots) if visible_roots else "the workspace"
            raise WorkspacePathError(
                f"path {path!r} is outside the workspace; use a path relative to the workspace or under {shown}"
            )
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


def root_relative(path: str) -> PurePosixPath:
    """An absolute path as one relative to ``/`` (symlinks not resolved); ``..`` cannot climb above ``/``."""
    if not path.startswith("/"):
        raise ValueError(f"{path!r} is not an absolute path")
    try:
        return workspace_relative("./" + path.lstrip("/"))
    except WorkspacePathError:
        raise WorkspacePathError(f"path {path!r} climbs above / (too many '..')") from None


def resolve_confined(root: Path, path: str, visible_roots: tuple[str, ...] = ()) -> Path:
    """Real path of ``path`` inside ``root``; :class:`WorkspacePathError` if its resolution leaves it."""
    real_root = Path(os.path.realpath(root))
    candidate = Path(os.path.realpath(real_root / workspace_relative(path, visible_roots)))
    if candidate != real_root and real_root not in candidate.parents:
        raise WorkspacePathError(f"path {path!r} resolves outside the workspace (a symlink pointing out?)")
    return candidate


def _open_dir_chain(real_root: Path, parts: tuple[str, ...], *, create: bool, owner: Owner) -> int:
    """Descriptor of the directory ``real_root/parts`` opened without following any symlink.

    Missing directories are created (and given to ``owner``) when ``create`` is set.
    """
    fd = os.open(real_root, _DIR_FLAGS)
    try:
        for part in parts:
            not_a_dir = f"{part!r} is not a plain directory inside the workspace (a file, or a symlink: never followed)"
            with _errno_as((errno.ELOOP, errno.ENOTDIR), WorkspacePathError, not_a_dir):
                try:
                    nfd = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(part, 0o755, dir_fd=fd)
                        if owner is not None:
                            os.chown(part, owner[0], owner[1], dir_fd=fd, follow_symlinks=False)
                    nfd = os.open(part, _DIR_FLAGS, dir_fd=fd)
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
        raise IsADirectoryError(f"{path!r} names the workspace itself; give a file path")
    rel = target.relative_to(real_root).parts
    return real_root, rel[:-1], rel[-1]


def _open_file(root: Path, path: str, visible_roots: tuple[str, ...], flags: int, owner: Owner) -> int:
    """An fd of the regular file ``path`` under ``root``, opened without following a symlink at any step."""
    real_root, dirs, name = _split(root, path, visible_roots)
    dfd = _open_dir_chain(real_root, dirs, create=bool(flags & os.O_CREAT), owner=owner)
    try:
        with _errno_as(
            (errno.ELOOP,), WorkspacePathError, f"{path!r} changed into a symlink while being opened; refused"
        ):
            fd = os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o644, dir_fd=dfd)
    finally:
        os.close(dfd)
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(f"{path!r} is a directory")
        raise WorkspacePathError(f"{path!r} is not a regular file (device, fifo or socket)")
    return fd


def read_bytes(root: Path, path: str, visible_roots: tuple[str, ...] = (), max_bytes: int | None = None) -> bytes:
    """A workspace file's bytes; :class:`FileTooLargeError` when it holds more than ``max_bytes``."""
    fd = _open_file(root, path, visible_roots, os.O_RDONLY, owner=None)
    with os.fdopen(fd, "rb") as fh:
        if max_bytes is None:
            return fh.read()
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise FileTooLargeError(f"{path!r} is larger than the {max_bytes}-byte read limit; read it in parts")
    return data


def write_bytes(
    root: Path,
    path: str,
    data: bytes,
    visible_roots: tuple[str, ...] = (),
    owner: Owner = None,
    max_bytes: int | None = None,
) -> None:
    """Create or replace a workspace file (parents created); ``owner`` gets new entries (the task's uid)."""
    if max_bytes is not None and len(data) > max_bytes:
        raise FileTooLargeError(f"refusing to write {len(data)} bytes to {path!r}: the file limit is {max_bytes}")
    fd = _open_file(root, path, visible_roots, os.O_WRONLY | os.O_CREAT, owner=owner)
    full = f"the workspace is full (its disk quota is reached); {path!r} was not written: free some space"
    with _errno_as((errno.ENOSPC, errno.EDQUOT), FileTooLargeError, full), os.fdopen(fd, "wb") as fh:
        os.ftruncate(fh.fileno(), 0)  # only once it is known to be a regular file inside
        if owner is not None:
            os.fchown(fh.fileno(), owner[0], owner[1])
        fh.write(data)


def _walk(dir_fd: int, rel: PurePosixPath, depth: int = 0) -> Iterator[tuple[PurePosixPath, os.stat_result, int]]:
    """``(relative path, lstat, parent dir fd)`` of every entry under ``dir_fd``, depth-first in name order.

    Directories are entered by descriptor with ``O_NOFOLLOW``: one swapped for a symlink is skipped.
    """
    names = sorted(os.listdir(dir_fd))
    for name in names:
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            continue
        yield rel / name, st, dir_fd
        if stat.S_ISDIR(st.st_mode) and depth < _MAX_DEPTH:
            try:
                sub = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
            except OSError:
                continue
            try:
                yield from _walk(sub, rel / name, depth + 1)
            finally:
                os.close(sub)


def _open_start(root: Path, path: str, visible_roots: tuple[str, ...]) -> tuple[Path, PurePosixPath, int | None]:
    """(real root, start relative to it, fd of the start directory or None when the start is a file)."""
    real_root = Path(os.path.realpath(root))
    start = resolve_confined(real_root, path, visible_roots)
    rel = PurePosixPath(start.relative_to(real_root).as_posix())
    st = os.lstat(start)
    if stat.S_ISDIR(st.st_mode):
        return real_root, rel, _open_dir_chain(real_root, rel.parts, create=False, owner=None)
    return real_root, rel, None


def list_files(root: Path, path: str = ".", visible_roots: tuple[str, ...] = ()) -> list[str]:
    """Sorted workspace-relative paths of the regular files under ``path`` (symlinks: not followed, not listed)."""
    try:
        _, rel, dfd = _open_start(root, path, visible_roots)
    except FileNotFoundError:
        raise FileNotFoundError(f"no such file or directory in the workspace: {path!r}") from None
    if dfd is None:
        return [rel.as_posix()]
    try:
        return sorted(p.as_posix() for p, st, _ in _walk(dfd, rel) if stat.S_ISREG(st.st_mode))
    finally:
        os.close(dfd)


def archive(root: Path, path: str, visible_roots: tuple[str, ...] = (), max_bytes: int | None = None) -> bytes:
    """A tar.gz of ``path``; symlinks are stored as links, never followed."""
    try:
        _, rel, dfd = _open_start(root, path, visible_roots)
    except FileNotFoundError:
        raise FileNotFoundError(f"no such file or directory in the workspace: {path!r}") from None
    budget = max_bytes if max_bytes is not None else sys.maxsize
    read_limit = -1 if max_bytes is None else max_bytes + 1
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        if dfd is None:
            data = read_bytes(root, rel.as_posix(), (), max_bytes)
            info = tarfile.TarInfo(rel.as_posix())
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        else:
            try:
                top = tarfile.TarInfo(rel.as_posix())
                top.type, top.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(top)
                for entry, st, parent in _walk(dfd, rel):
                    info = tarfile.TarInfo(entry.as_posix())
                    info.mode, info.mtime = stat.S_IMODE(st.st_mode), int(st.st_mtime)
                    if stat.S_ISDIR(st.st_mode):
                        info.type = tarfile.DIRTYPE
                        tar.addfile(info)
                    elif stat.S_ISLNK(st.st_mode):
                        info.type, info.linkname = tarfile.SYMTYPE, os.readlink(entry.name, dir_fd=parent)
                        tar.addfile(info)
                    elif stat.S_ISREG(st.st_mode):
                        fd = os.open(
                            entry.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=parent
                        )
                        with os.fdopen(fd, "rb") as fh:
                            data = fh.read(read_limit)
                        info.size = len(data)
                        tar.addfile(info, io.BytesIO(data))
                    if buf.tell() > budget:
                        break
            finally:
                os.close(dfd)
    blob = buf.getvalue()
    if len(blob) > budget:
        raise FileTooLargeError(f"the archive of {path!r} is over the {budget}-byte limit; archive less at once")
    return blob


def force_rmtree(path: Path) -> None:
    """Remove a tree even where a command left entries without write or search permission."""

    top = os.path.normpath(path)

    def retry(_func: object, failed: str, _exc: object) -> None:
        # Make the parent (and a failed directory itself) accessible, then try that entry again once. Only inside
        # the tree: the tree's own parent is the caller's (a run root that its other tasks still traverse).
        for target in (os.path.dirname(failed), failed):
            target = os.path.normpath(target)
            if target != top and not target.startswith(top + os.sep):
                continue
            with contextlib.suppress(OSError):
                if os.path.isdir(target) and not os.path.islink(target):
                    os.chmod(target, 0o700)
        with contextlib.suppress(OSError):
            if os.path.isdir(failed) and not os.path.islink(failed):
                shutil.rmtree(failed, ignore_errors=True)
            else:
                os.unlink(failed)

    if not (path.exists() or path.is_symlink()):
        return
    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=retry)
    else:
        shutil.rmtree(path, onerror=retry)
    if os.path.lexists(top):
        left: list[str] = []
        with contextlib.suppress(OSError):
            left = [str(p) for p in itertools.islice(Path(top).rglob("*"), 3)]
        log.warning("could not remove all of %s (left: %s)", top, ", ".join(left) or "the directory itself")


def empty_dir(path: Path, owner: Owner = None, mode: int = 0o700) -> None:
    """Remove everything inside ``path`` (created if missing); the directory stays, with ``mode`` and ``owner``."""
    path.mkdir(parents=True, exist_ok=True)
    for entry in os.scandir(path):
        p = Path(entry.path)
        if entry.is_dir(follow_symlinks=False):
            force_rmtree(p)
        else:
            with contextlib.suppress(FileNotFoundError):
                p.unlink()
    os.chmod(path, mode)
    if owner is not None:
        os.chown(path, owner[0], owner[1], follow_symlinks=False)
