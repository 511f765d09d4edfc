"""Start/close plumbing shared by the pool and the executor."""

from __future__ import annotations

import abc
import asyncio
import contextlib
from typing import Any, Self


class AsyncService(abc.ABC):
    """Something started once and closed once; ``async with`` does both."""

    @abc.abstractmethod
    async def start(self) -> None: ...

    @abc.abstractmethod
    async def close(self) -> None: ...

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


async def cancel_and_wait(task: asyncio.Task[Any] | None) -> None:
    """Cancel a background task and wait until it has stopped (no-op for None)."""
    if task is None:
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
