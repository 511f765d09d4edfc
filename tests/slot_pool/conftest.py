"""Fixtures for the sandbox pool tests: real sandbox servers on 127.0.0.1, torn down after each test."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from hermes_env.isolation import bwrap_problem
from hermes_env.slot_pool import ExecutorConfig, SlotPool, ToolExecutor

from tests.slot_pool.sandbox_pools import make_pool, pools

BWRAP_PROBLEM = bwrap_problem()


@pytest.fixture(autouse=True)
def _require_bwrap() -> None:
    if BWRAP_PROBLEM is not None:
        pytest.skip(f"bubblewrap unusable here: {BWRAP_PROBLEM}")


@pytest.fixture
async def pool_factory() -> AsyncIterator[Callable[..., Awaitable[SlotPool]]]:
    """``await pool_factory(**PoolConfig overrides, policy=...)``: started pools closed at teardown."""
    async with pools() as factory:
        yield factory


@pytest.fixture
async def pool() -> AsyncIterator[SlotPool]:
    p = make_pool()
    await p.start()
    try:
        yield p
    finally:
        await p.close()


@pytest.fixture
async def executor(pool: SlotPool) -> AsyncIterator[ToolExecutor]:
    ex = ToolExecutor(pool, ExecutorConfig(batch_window_ms=5, max_timeout_s=20, default_timeout_s=15))
    await ex.start()
    try:
        yield ex
    finally:
        await ex.close()
