"""The sandboxing backends side by side: a test taking ``sandboxed`` runs on ``bwrap`` and on ``sandbox`` (slot pool).

Both are built on ``hermes_env.isolation``; the same escape attempts must fail the same way on each.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from hermes_env.backends import ExecutionBackend, get_backend
from hermes_env.backends.host_workspace import HostWorkspaceBackend
from hermes_env.backends.sandbox import SandboxBackend
from hermes_env.isolation import bwrap_problem

# Small limits: a test that trips one trips it fast.
LIMITS: dict[str, Any] = {
    "cpu_seconds": 20,
    "memory_bytes": "512MiB",
    "max_processes": 32,
    "max_output_bytes": 4096,
    "kill_output_bytes": "1MiB",
    "disk_bytes": "64MiB",
    "tmp_bytes": "16MiB",
}

MakeBackend = Callable[..., ExecutionBackend]


@pytest.fixture(params=["bwrap", "sandbox"])
def kind(request: pytest.FixtureRequest) -> str:
    if bwrap_problem() is not None:
        pytest.skip(f"bubblewrap unusable here: {bwrap_problem()}")
    return request.param


@pytest.fixture
async def make_sandboxed(kind: str, ws_root: Path) -> AsyncIterator[MakeBackend]:
    """``make_sandboxed(**options)``: a backend of this test's kind with :data:`LIMITS` and ``options``."""
    made: list[ExecutionBackend] = []

    def make(**overrides: Any) -> ExecutionBackend:
        options = {**LIMITS, **overrides}
        if kind == "bwrap":
            backend = get_backend("bwrap", root=ws_root / f"b{len(made)}", **options)
        else:
            backend = get_backend(
                "sandbox", slots_per_worker=4, max_workers=2, health_interval_s=0.5, max_timeout_s=30, **options
            )
        made.append(backend)
        return backend

    try:
        yield make
    finally:
        for backend in made:
            await backend.aclose()


@pytest.fixture
def sandboxed(make_sandboxed: MakeBackend) -> ExecutionBackend:
    return make_sandboxed()


async def host_workspace(backend: ExecutionBackend, task_id: str) -> Path:
    """Where this process can see the task's workspace (a slot's tmpfs lives in its worker's mount namespace)."""
    await backend.start(task_id)
    if isinstance(backend, HostWorkspaceBackend):
        return backend.workspace_path(task_id)
    assert isinstance(backend, SandboxBackend)
    lease = await backend.pool.acquire(task_id)
    async with aiohttp.ClientSession(headers=backend.pool.auth_headers) as s, s.get(lease.url + "/slots") as resp:
        workspace = Path((await resp.json())["slots"][lease.slot]["workspace"])
    worker = backend.pool.worker(lease.worker_id)
    assert worker is not None and worker.pid is not None
    return Path(f"/proc/{worker.pid}/root") / workspace.relative_to("/")
