"""What the backends that keep one host directory per task (``local``, ``bwrap``) share.

Workspaces live under a root directory: the caller's ``root``, or a fresh ``hermes-<name>-*``
directory in the temp dir that is removed at ``aclose`` (and by the next run's sweep if this
process dies first). File methods work on the workspace from the host side, confined to it
(``hermes_env.isolation.paths``). Subclasses provide ``execute`` and may give each task its own
user and a size-limited workspace.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from hermes_env.backends.base import ExecutionBackend
from hermes_env.backends.options import HOST_LIMITS
from hermes_env.isolation import paths, quota
from hermes_env.isolation.limits import ResourceLimits
from hermes_env.isolation.process import stop_tree
from hermes_env.isolation.roots import RunRoot, sweep_dead_runs
from hermes_env.isolation.users import SandboxUser

_SAFE_ID = re.compile(r"[^A-Za-z0-9._-]")


def workspace_dir_name(task_id: str) -> str:
    """A directory name for a task id: readable, filesystem-safe and unique per id."""
    if not isinstance(task_id, str) or not task_id:
        raise ValueError(f"task_id must be a non-empty string, got {task_id!r}")
    safe = _SAFE_ID.sub("_", task_id)[:80]
    # The hash keeps ids that sanitise to the same name apart ("a/b" vs "a_b").
    return f"{safe}-{hashlib.blake2b(task_id.encode(), digest_size=8).hexdigest()}"


class HostWorkspaceBackend(ExecutionBackend):
    """A directory per task under ``root``; file methods work on it from the host side."""

    # The ResourceLimits this backend applies (and so accepts as options).
    limit_options: ClassVar[frozenset[str]] = HOST_LIMITS

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        *,
        limits: ResourceLimits | Mapping[str, Any] | None = None,
        **limit_options: Any,
    ) -> None:
        self.limits = self.resource_limits(limits, limit_options)
        self._run_root: RunRoot | None = None
        if root is None:
            sweep_dead_runs()
            self._run_root = RunRoot(self.name)
            self.root = self._run_root.path
        else:
            Path(root).mkdir(parents=True, exist_ok=True)
            self.root = Path(os.path.realpath(root))
        self._workspaces: dict[str, Path] = {}
        self._running: dict[str, set[int]] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    # -- hooks for subclasses -------------------------------------------------------------
    def visible_roots(self, task_id: str) -> tuple[str, ...]:
        return (str(self.workspace_path(task_id)),)

    def user(self, task_id: str) -> SandboxUser:
        """The user the task's commands run as (and its files belong to)."""
        return SandboxUser()

    def _release_user(self, task_id: str) -> None:
        """Called at cleanup, after the task's processes are gone."""

    def _quota_bytes(self) -> int | None:
        """Size of each workspace when it is a quota-limited tmpfs, None for a plain directory."""
        return None

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
                await asyncio.to_thread(self._create, ws, self.user(task_id))

    def _create(self, ws: Path, user: SandboxUser) -> None:
        size = self._quota_bytes()
        if size is not None:
            quota.mount_workspace(ws, size, user)
            return
        ws.mkdir(parents=True, exist_ok=True)
        paths.empty_dir(ws, user.owner, mode=0o700 if user.owner else 0o755)

    async def cleanup(self, task_id: str) -> None:
        for pid in list(self._running.pop(task_id, ())):
            await stop_tree(pid)
        ws = self._workspaces.pop(task_id, None) or (self.root / workspace_dir_name(task_id))
        lock = self._locks.get(task_id)
        if lock is None:
            await asyncio.to_thread(self._destroy, task_id, ws)
        else:
            # A workspace still being made (a cleanup right after the first call) is finished, then destroyed:
            # removing its directory under the mount would fail that call with a bare FileNotFoundError.
            async with lock:
                await asyncio.to_thread(self._destroy, task_id, ws)
        self._locks.pop(task_id, None)

    def _destroy(self, task_id: str, ws: Path) -> None:
        self._release_user(task_id)
        quota.unmount(ws)
        paths.force_rmtree(ws)

    async def aclose(self) -> None:
        for task_id in list(self._workspaces):
            await self.cleanup(task_id)
        if self._run_root is not None:
            await asyncio.to_thread(self._run_root.remove)

    def running_set(self, task_id: str) -> set[int]:
        return self._running.setdefault(task_id, set())

    # -- file methods (host side, confined) -------------------------------------------------
    async def read_file(self, task_id: str, path: str) -> bytes:
        await self.start(task_id)
        return await asyncio.to_thread(
            paths.read_bytes,
            self.workspace_path(task_id),
            path,
            self.visible_roots(task_id),
            int(self.limits.max_read_bytes),
        )

    async def write_file(self, task_id: str, path: str, data: bytes) -> None:
        if not isinstance(data, bytes | bytearray | memoryview):
            raise TypeError(f"data must be bytes, got {type(data).__name__}")
        await self.start(task_id)
        await asyncio.to_thread(
            paths.write_bytes,
            self.workspace_path(task_id),
            path,
            bytes(data),
            self.visible_roots(task_id),
            self.user(task_id).owner,
            int(self.limits.max_file_bytes),
        )

    async def list_files(self, task_id: str, path: str = ".") -> list[str]:
        await self.start(task_id)
        return await asyncio.to_thread(
            paths.list_files, self.workspace_path(task_id), path, self.visible_roots(task_id)
        )
