"""A bounded pool for tool execution shared by every rollout of one environment process.

It limits how many tool calls run at once (sandbox slots, subprocesses) without ever being
able to deadlock or starve:

- each tool call takes exactly one slot and never waits for a second one while holding it
  (no hold-and-wait), so a turn's parallel calls cannot block each other;
- slots are granted in FIFO order (asyncio.Semaphore is fair since Python 3.11.1), so a
  rollout waiting for a slot is served before later arrivals;
- every call runs under a timeout, and the slot is released in ``finally`` even when the
  call is cancelled, so a hung tool costs one slot for at most its timeout.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


@dataclass
class PoolStats:
    """Counters for logging: how busy the pool was and how many calls it cut off."""

    in_flight: int = 0
    max_in_flight: int = 0
    waiting: int = 0
    max_waiting: int = 0
    completed: int = 0
    timed_out: int = 0


class ToolWorkerPool:
    """At most ``size`` tool calls in flight; see the module docstring for the guarantees."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"tool pool size must be at least 1, got {size}")
        self.size = size
        self._sem = asyncio.Semaphore(size)
        self.stats = PoolStats()

    async def run(self, call: Callable[[], Awaitable[T]], timeout: float) -> T:
        """Run ``call()`` in a slot; raises ``TimeoutError`` when it takes longer than ``timeout`` seconds (the
        call's ``hermes_env.timeouts.CallBudget.pool_limit``: a safety net past the tool's own limit)."""
        self.stats.waiting += 1
        self.stats.max_waiting = max(self.stats.max_waiting, self.stats.waiting)
        try:
            await self._sem.acquire()
        finally:
            self.stats.waiting -= 1
        self.stats.in_flight += 1
        self.stats.max_in_flight = max(self.stats.max_in_flight, self.stats.in_flight)
        try:
            async with asyncio.timeout(timeout):
                return await call()
        except TimeoutError:
            self.stats.timed_out += 1
            raise
        finally:
            self.stats.in_flight -= 1
            self.stats.completed += 1
            self._sem.release()
