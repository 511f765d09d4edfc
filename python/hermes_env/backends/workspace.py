"""Shared machinery of the backends that keep one host directory per task (``local``, ``bwrap``)."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

from hermes_env.backends.base import ExecutionBackend
from hermes_env.backends.paths import (
    list_files_confined,
    read_bytes_confined,
    write_bytes_confined,
)
from hermes_env.backends.process import kill_group

_SAFE_ID = re.compile(r"[^A-Za-z0-9._-]")


def workspace_dir_name(task_id: str) -> str:
    """A directory name for a task id: readable, filesystem-safe and unique per id."""
    if not isinstance(task_id, str) or not task_id:
        raise ValueError(f"task_id must be a non-empty string, got {task_id!r}")
    safe = _SAFE_ID.sub("_", task_id)[:80]
    # The hash keeps ids that sanitise to the same name apart ("a/b" vs "a_b").
    return f"{safe}-{hashlib.blake2b(task_id.encode(), digest_size=8).hexdigest()}"


def force_rmtree(path: Path) -> None:
    """Remove a workspace even where a command left entries without write or search permission."""

    def retry(_func: object, failed: str, _exc: object) -> None:
        # Make the parent (and a failed directory itself) accessible, then try that entry again once.
        for target in (os.path.dirname(failed), failed):
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


class HostWorkspaceBackend(ExecutionBackend):
    """A directory per task under ``root``; file methods work on it from the host side.

    Subclasses provide ``execute`` and name how commands see the workspace (``visible_roots``).
    """

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        *,
        max_output_bytes: int = 256 * 1024,
        kill_output_bytes: int = 32 * 1024 * 1024,
        max_file_bytes: int = 64 * 1024 * 1024,
    ) -> None:
        if max_output_bytes <= 0 or kill_output_bytes < max_output_bytes:
            raise ValueError(
                f"max_output_bytes={max_output_bytes} must be above 0 and at most "
                f"kill_output_bytes={kill_output_bytes}; fix these backend options"
            )
        self._own_root = root is None
        self.root = Path(tempfile.mkdtemp(prefix=f"hermes-{self.name}-")) if root is None else Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.root = Path(os.path.realpath(self.root))
        self.max_output_bytes = max_output_bytes
        self.kill_output_bytes = kill_output_bytes
        self.max_file_bytes = max_file_bytes
        self._workspaces: dict[str, Path] = {}
        self._running: dict[str, set[int]] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    # -- hooks for subclasses -------------------------------------------------------------
    def visible_roots(self, task_id: str) -> tuple[str, ...]:
        return (str(self.workspace_path(task_id)),)

    def _file_owner(self) -> tuple[int, int] | None:
        return None

    def _prepare_workspace(self, path: Path) -> None:
        """Called once when a task's workspace directory is created."""

    # -- workspace lifecycle ----------------------------------------------------------------
    def workspace_path(self, task_id: str) -> Path:
        """Host path of the task's workspace (it may not exist yet)."""
        ws = self._workspaces.get(task_id)
        if ws is None:
            ws = self.root / workspace_dir_name(task_id)
            self._workspaces[task_id] = ws
        return ws

    async def start(self, task_id: str) -> None:
        ws = self.workspace_path(task_id)
        if ws.is_dir():
            return
        lock = self._locks.setdefault(task_id, asyncio.Lock())
        async with lock:
            if not ws.is_dir():
                await asyncio.to_thread(self._create, ws)

    def _create(self, ws: Path) -> None:
        ws.mkdir(parents=True, exist_ok=True)
        ws.chmod(0o755)
        self._prepare_workspace(ws)

    async def cleanup(self, task_id: str) -> None:
        for pgid in list(self._running.pop(task_id, ())):
            kill_group(pgid)
        ws = self._workspaces.pop(task_id, None) or (self.root / workspace_dir_name(task_id))
        self._locks.pop(task_id, None)
        await asyncio.to_thread(force_rmtree, ws)

    async def aclose(self) -> None:
        for task_id in list(self._workspaces):
            await self.cleanup(task_id)
        if self._own_root:
            await asyncio.to_thread(force_rmtree, self.root)

    def running_set(self, task_id: str) -> set[int]:
        return self._running.setdefault(task_id, set())

    # -- file methods (host side, confined) -------------------------------------------------
    async def read_file(self, task_id: str, path: str) -> bytes:
        await self.start(task_id)
        ws = self.workspace_path(task_id)
        data = await asyncio.to_thread(
            read_bytes_confined, ws, path, self.visible_roots(task_id), self.max_file_bytes + 1
        )
        if len(data) > self.max_file_bytes:
            raise ValueError(f"{path!r} is larger than the backend's file limit ({self.max_file_bytes} bytes)")
        return data

    async def write_file(self, task_id: str, path: str, data: bytes) -> None:
        if not isinstance(data, bytes | bytearray | memoryview):
            raise TypeError(f"data must be bytes, got {type(data).__name__}")
        if len(data) > self.max_file_bytes:
            raise ValueError(f"refusing to write {len(data)} bytes: the file limit is {self.max_file_bytes}")
        await self.start(task_id)
        ws = self.workspace_path(task_id)
        await asyncio.to_thread(
            write_bytes_confined, ws, path, bytes(data), self.visible_roots(task_id), self._file_owner()
        )

    async def list_files(self, task_id: str, path: str = ".") -> list[str]:
        await self.start(task_id)
        ws = self.workspace_path(task_id)
        return await asyncio.to_thread(list_files_confined, ws, path, self.visible_roots(task_id))
