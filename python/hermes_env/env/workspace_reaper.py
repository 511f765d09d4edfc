"""``terminal_lifetime`` as hermes-agent means it: an *idle* lifetime.

hermes-agent's cleanup thread destroys a sandbox that has gone longer than ``terminal_lifetime``
seconds without a tool call (waiting for the model counts as idle; a running background process
does not). Here each rollout's backend is wrapped in a :class:`WatchedBackend` that records
every call; a reaper task wakes up periodically and destroys the workspace of any rollout idle
for longer than the lifetime. Unlike hermes-agent, which lets the next tool call start a fresh,
empty sandbox, the rollout then fails (:class:`WorkspaceReaped`), so its group is dropped rather
than trained on a rollout whose files vanished half-way. ``rollout_timeout`` is the separate,
wall-clock budget of one rollout.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from hermes_env.backends.base import ExecResult, ExecutionBackend
from hermes_env.errors import WorkspaceReaped

logger = logging.getLogger(__name__)
T = TypeVar("T")

# The reaper looks this often (at most), and at least 4 times per lifetime.
MAX_SCAN_INTERVAL = 30.0


class _Activity:
    __slots__ = ("busy", "in_flight", "last", "reaped")

    def __init__(self) -> None:
        self.last = time.monotonic()
        self.in_flight = 0
        self.reaped: str | None = None
        self.busy: Callable[[], bool] | None = None  # e.g. "a background process still runs"


class WatchedBackend(ExecutionBackend):
    """One rollout's view of the shared backend that records when it was last used."""

    def __init__(self, inner: ExecutionBackend, activity: _Activity, lifetime: float) -> None:
        self.inner = inner
        self.name = inner.name
        self._activity = activity
        self._lifetime = lifetime

    def __getattr__(self, name: str) -> Any:
        # Backend-specific extras (visible_roots, call_tool, ...) pass through; call_tool counts as activity.
        value = getattr(self.inner, name)
        if name == "call_tool" and callable(value):

            async def call_tool(*args: Any, **kwargs: Any) -> Any:
                return await self._track(lambda: value(*args, **kwargs))

            return call_tool
        return value

    def visible_roots(self, task_id: str) -> tuple[str, ...]:
        return self.inner.visible_roots(task_id)

    def keep_alive_while(self, busy: Callable[[], bool]) -> None:
        """Never reap this workspace while ``busy()`` is true (a background process still runs)."""
        self._activity.busy = busy

    async def _track(self, fn: Callable[[], Awaitable[T]]) -> T:
        activity = self._activity
        if activity.reaped:
            raise WorkspaceReaped(activity.reaped)
        activity.in_flight += 1
        activity.last = time.monotonic()
        try:
            return await fn()
        finally:
            activity.in_flight -= 1
            activity.last = time.monotonic()

    async def start(self, task_id: str) -> None:
        await self._track(lambda: self.inner.start(task_id))

    async def execute(self, task_id: str, command: str, timeout: float, *, stdin: str | None = None) -> ExecResult:
        return await self._track(lambda: self.inner.execute(task_id, command, timeout, stdin=stdin))

    async def read_file(self, task_id: str, path: str) -> bytes:
        return await self._track(lambda: self.inner.read_file(task_id, path))

    async def write_file(self, task_id: str, path: str, data: bytes) -> None:
        await self._track(lambda: self.inner.write_file(task_id, path, data))

    async def list_files(self, task_id: str, path: str = ".") -> list[str]:
        return await self._track(lambda: self.inner.list_files(task_id, path))

    async def cleanup(self, task_id: str) -> None:
        await self.inner.cleanup(task_id)

    async def aclose(self) -> None:  # the shared backend is closed by its owner, not by one rollout
        return None


class WorkspaceReaper:
    """Destroys the workspaces of rollouts idle longer than ``lifetime`` seconds (see the module doc)."""

    def __init__(self, lifetime: float, *, scan_interval: float | None = None) -> None:
        if lifetime <= 0:
            raise ValueError(f"terminal_lifetime must be positive, got {lifetime}")
        self.lifetime = lifetime
        self.scan_interval = scan_interval or min(MAX_SCAN_INTERVAL, lifetime / 4)
        self._watched: dict[str, tuple[_Activity, ExecutionBackend]] = {}
        self._task: asyncio.Task[None] | None = None
        self.reaped = 0

    def watch(self, task_id: str, backend: ExecutionBackend) -> WatchedBackend:
        activity = _Activity()
        self._watched[task_id] = (activity, backend)
        self._ensure_running()
        return WatchedBackend(backend, activity, self.lifetime)

    def forget(self, task_id: str) -> None:
        self._watched.pop(task_id, None)
        if not self._watched and self._task is not None:
            self._task.cancel()
            self._task = None

    def check(self, task_id: str) -> None:
        """Raise :class:`WorkspaceReaped` if the rollout's workspace was reaped."""
        entry = self._watched.get(task_id)
        if entry is not None and entry[0].reaped:
            raise WorkspaceReaped(entry[0].reaped)

    def _ensure_running(self) -> None:
        if self._task is None or self._task.done():
            try:
                self._task = asyncio.get_running_loop().create_task(self._run(), name="hermes-workspace-reaper")
            except RuntimeError:
                self._task = None  # no loop yet (a context made outside a rollout): nothing to reap

    async def _run(self) -> None:
        while self._watched:
            await asyncio.sleep(self.scan_interval)
            await self.reap_idle()

    async def reap_idle(self, now: float | None = None) -> list[str]:
        """Destroy every watched workspace idle longer than the lifetime; the task ids reaped."""
        now = time.monotonic() if now is None else now
        reaped = []
        for task_id, (activity, backend) in list(self._watched.items()):
            idle = now - activity.last
            if activity.reaped or activity.in_flight or idle <= self.lifetime:
                continue
            if activity.busy is not None and activity.busy():
                activity.last = now  # hermes-agent keeps a sandbox with running background processes alive
                continue
            activity.reaped = (
                f"workspace of {task_id} was idle for {idle:.0f}s, longer than terminal_lifetime="
                f"{self.lifetime:g}s, and was destroyed; raise --env.terminal_lifetime if the model is slower"
            )
            logger.warning(activity.reaped)
            with contextlib.suppress(Exception):
                await backend.cleanup(task_id)
            reaped.append(task_id)
            self.reaped += 1
        return reaped
