"""Fixtures for the sandbox pool tests: real sandbox servers on 127.0.0.1, torn down after each test."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from hermes_env.isolation import bwrap_problem
from hermes_env.sandbox import ExecutorConfig, PoolConfig, ResourceLimits, SandboxPolicy, SlotPool, ToolExecutor

BWRAP_PROBLEM = bwrap_problem()


@pytest.fixture(autouse=True)
def _require_bwrap() -> None:
    if BWRAP_PROBLEM is not None:
        pytest.skip(f"bubblewrap unusable here: {BWRAP_PROBLEM}")


TEST_LIMITS = ResourceLimits(cpu_seconds=10, memory_bytes="512MiB", max_processes=32, max_output_bytes=4096)


def make_pool(**overrides: object) -> SlotPool:
    policy = overrides.pop("policy", None) or SandboxPolicy(limits=TEST_LIMITS)
    cfg = {"slots_per_worker": 4, "min_workers": 1, "max_workers": 2, "health_interval_s": 0.5,
           "scale_down_cooldown_s": 3600.0, "acquire_timeout_s": 30.0, **overrides}  # fmt: skip
    return SlotPool(PoolConfig(**cfg), policy)  # type: ignore[arg-type]


@pytest.fixture
async def pool_factory() -> AsyncIterator[Callable[..., Awaitable[SlotPool]]]:
    """``await pool_factory(**PoolConfig overrides, policy=...)``: started pools closed at teardown."""
    made: list[SlotPool] = []

    async def factory(**overrides: object) -> SlotPool:
        p = make_pool(**overrides)
        made.append(p)
        await p.start()
        return p

    try:
        yield factory
    finally:
        for p in made:
            await p.close()


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
