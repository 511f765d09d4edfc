"""ToolContext: a reward function's access to the rollout's own workspace.

``compute_reward(item, result, ctx)`` gets one of these bound to the rollout's ``task_id`` and
backend, so it can run the hidden tests, read what the model wrote, or upload fixtures, inside
the same sandbox the rollout used. Every method is a coroutine; host-side file work runs in a
thread, so reward code never blocks the event loop.

    async with ToolContext(task_id, backend) as ctx:   # cleanup() on exit
        await ctx.upload_dir("fixtures/tests", "hidden_tests")
        result = await ctx.terminal("python3 -m unittest discover -s hidden_tests -t .", timeout=60)
        reward = 1.0 if result.ok else 0.0
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import Any

from hermes_env.backends.base import ExecResult, ExecutionBackend
from hermes_env.isolation.paths import workspace_relative
from hermes_env.tools import REGISTRY, ToolRegistry, ToolRunContext
from hermes_env.tools.file_tools import SearchMatch, find_matches


class ToolContext:
    """Tool access to one task's workspace; safe to share between coroutines of that task."""

    def __init__(
        self,
        task_id: str,
        backend: ExecutionBackend,
        *,
        registry: ToolRegistry = REGISTRY,
        timeout: float = 120.0,
        max_timeout: float | None = None,
        state: dict[str, Any] | None = None,
    ) -> None:
        if not task_id:
            raise ValueError("task_id must be a non-empty string")
        self.task_id = task_id
        self.backend = backend
        self.registry = registry
        self.timeout = timeout
        # The tool-run context shared by call_tool; ``state`` may be the rollout's (todo list...).
        self.run_context = ToolRunContext(
            task_id=task_id, backend=backend, timeout=timeout, max_timeout=max_timeout, state=state or {}
        )
        self._closed = False

    # -- commands --------------------------------------------------------------------------
    async def terminal(self, command: str, timeout: float | None = None, *, stdin: str | None = None) -> ExecResult:
        """Run a shell command in the workspace; ``result.ok``, ``.exit_code``, ``.output``."""
        self._check_open()
        return await self.backend.execute(self.task_id, command, timeout or self.timeout, stdin=stdin)

    async def call_tool(self, name: str, args: dict[str, Any]) -> str:
        """Run a registered tool exactly as the model would; raises ToolCallError on a failed call."""
        self._check_open()
        return await self.registry.dispatch(name, args, self.run_context)

    # -- files -------------------------------------------------------------------------------
    async def read_file(self, path: str, *, errors: str = "replace") -> str:
        """A workspace file decoded as UTF-8 (undecodable bytes replaced unless ``errors='strict'``)."""
        return (await self.read_file_bytes(path)).decode("utf-8", errors=errors)

    async def read_file_bytes(self, path: str) -> bytes:
        """A workspace file's bytes, unchanged."""
        self._check_open()
        return await self.backend.read_file(self.task_id, path)

    async def write_file(self, path: str, content: str | bytes) -> None:
        """Create or replace a workspace file; ``str`` is written as UTF-8, ``bytes`` as is."""
        self._check_open()
        data = content.encode("utf-8") if isinstance(content, str) else bytes(content)
        await self.backend.write_file(self.task_id, path, data)

    async def list_files(self, path: str = ".") -> list[str]:
        """Workspace-relative paths of the regular files under ``path``, recursively, sorted."""
        self._check_open()
        return await self.backend.list_files(self.task_id, path)

    async def exists(self, path: str) -> bool:
        """Whether ``path`` is a regular file (or a directory holding files) in the workspace."""
        try:
            return bool(await self.list_files(path))
        except (FileNotFoundError, NotADirectoryError):
            return False

    async def search(self, pattern: str, path: str = ".", *, max_matches: int = 1000) -> list[SearchMatch]:
        """Lines matching a regex under ``path`` (ToolArgumentError for an invalid regex)."""
        self._check_open()
        result = await find_matches(self.backend, self.task_id, pattern, path, max_matches=max_matches)
        return result.matches

    async def upload_file(self, local_path: str | os.PathLike[str], remote_path: str) -> None:
        """Copy a host file into the workspace (binary safe)."""
        data = await asyncio.to_thread(Path(local_path).read_bytes)
        await self.write_file(remote_path, data)

    async def upload_dir(self, local_dir: str | os.PathLike[str], remote_dir: str = ".") -> list[str]:
        """Copy a host directory tree into the workspace; returns the workspace paths written."""
        root = Path(local_dir)
        if not root.is_dir():
            raise NotADirectoryError(f"upload_dir: {str(root)!r} is not a directory; pass an existing host directory")
        files = await asyncio.to_thread(_host_files, root)
        written = []
        for rel in files:
            target = str(PurePosixPath(remote_dir) / rel)
            await self.upload_file(root / rel, target)
            written.append(target)
        return written

    async def download_file(self, remote_path: str, local_path: str | os.PathLike[str]) -> None:
        """Copy a workspace file to the host (parents created)."""
        data = await self.read_file_bytes(remote_path)
        await asyncio.to_thread(_write_host_file, Path(local_path), data)

    async def download_dir(self, remote_dir: str, local_dir: str | os.PathLike[str]) -> list[Path]:
        """Copy a workspace directory tree to the host; returns the host paths written."""
        files = await self.list_files(remote_dir)
        base = workspace_relative(remote_dir, self.backend.visible_roots(self.task_id))
        out: list[Path] = []
        for rel in files:
            # list_files returns workspace-relative paths; keep them relative to remote_dir.
            sub = PurePosixPath(rel)
            if str(base) != ".":
                try:
                    sub = sub.relative_to(base)
                except ValueError:
                    pass  # remote_dir named through an alias (e.g. /workspace/...): keep the full path
            dest = Path(local_dir) / sub
            await self.download_file(rel, dest)
            out.append(dest)
        return out

    # -- lifecycle ---------------------------------------------------------------------------
    async def cleanup(self) -> None:
        """Destroy the task's workspace and processes (idempotent)."""
        if self._closed:
            return
        self._closed = True
        await self.backend.cleanup(self.task_id)

    async def __aenter__(self) -> ToolContext:
        await self.backend.start(self.task_id)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.cleanup()

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"ToolContext for task {self.task_id!r} was cleaned up; create a new one")


def _host_files(root: Path) -> list[str]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            full = Path(dirpath) / name
            if full.is_file():
                out.append(full.relative_to(root).as_posix())
    return out


def _write_host_file(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
