"""Sandbox pools for the tests: small limits, fast health checks, and started pools closed afterwards."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

from hermes_env.slot_pool import PoolConfig, ResourceLimits, SandboxPolicy, SlotPool

TEST_LIMITS = ResourceLimits(cpu_seconds=10, memory_bytes="512MiB", max_processes=32, max_output_bytes=4096)


def make_pool(**overrides: object) -> SlotPool:
    policy = overrides.pop("policy", None) or SandboxPolicy(limits=TEST_LIMITS)
    cfg = {"slots_per_worker": 4, "min_workers": 1, "max_workers": 2, "health_interval_s": 0.5,
           "scale_down_cooldown_s": 3600.0, "acquire_timeout_s": 30.0, **overrides}  # fmt: skip
    return SlotPool(PoolConfig(**cfg), policy)  # type: ignore[arg-type]


@contextlib.asynccontextmanager
async def pools(**defaults: object) -> AsyncIterator[Callable[..., Awaitable[SlotPool]]]:
    """``await factory(**PoolConfig overrides, policy=...)``: started pools, closed on exit."""
    made: list[SlotPool] = []

    async def factory(**overrides: object) -> SlotPool:
        p = make_pool(**{**defaults, **overrides})
        made.append(p)
        await p.start()
        return p

    try:
        yield factory
    finally:
        for p in made:
            await p.close()
