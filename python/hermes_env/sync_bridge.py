"""Methods that work with and without ``await``: hermes-agent's reward code calls ``ctx.terminal(...)``
synchronously from inside ``async def compute_reward``; hermes_env's awaits it.

A method decorated with :func:`awaitable_or_sync` is a coroutine function underneath. When it is
called, it looks at the caller's next bytecode instruction:

- the call is awaited right away (``await ctx.terminal(...)``): the coroutine is returned and
  runs on the caller's event loop, blocking nothing;
- anything else (``r = ctx.terminal(...)``, a call from plain synchronous code): the coroutine
  runs to completion on a helper event loop in a dedicated thread while the caller blocks,
  and the result comes back directly. The caller's loop is blocked for that time (as it is in
  hermes-agent, whose tools are synchronous), but nothing it runs is needed by the helper, so
  it cannot deadlock. A backend must therefore work from the helper loop too: ``local`` and
  ``bwrap`` start a process per call; the slot pool, whose executor batches on the caller's
  loop, sends such calls straight to the slot's worker.

Results returned the synchronous way are still awaitable (awaiting one gives it back), so a
call passed to ``asyncio.wait_for``/``gather`` works either way.
"""

from __future__ import annotations

import asyncio
import dis
import functools
import sys
import threading
from collections.abc import Callable, Coroutine
from types import CodeType, FrameType
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

_CALL_OPS = frozenset({"CALL", "CALL_KW", "CALL_FUNCTION_EX", "CALL_FUNCTION", "CALL_METHOD"})


@functools.lru_cache(maxsize=8192)
def _awaited_call_offsets(code: CodeType) -> frozenset[int]:
    """Bytecode offsets inside call instructions of ``code`` whose result the next instruction awaits.

    A call's inline cache entries follow it (3.11+), and ``f_lasti`` may point into them, so
    every offset from the call up to the next real instruction is included.
    """
    instructions = list(dis.get_instructions(code))
    return frozenset(
        offset
        for ins, nxt in zip(instructions, instructions[1:], strict=False)
        if ins.opname in _CALL_OPS and nxt.opname == "GET_AWAITABLE"
        for offset in range(ins.offset, nxt.offset)
    )


def is_awaited_call(frame: FrameType | None) -> bool:
    """Whether the call the frame is executing right now is immediately awaited."""
    return frame is not None and frame.f_lasti in _awaited_call_offsets(frame.f_code)


class HelperLoop:
    """One event loop in a daemon thread, started on first use, running coroutines for synchronous callers."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        self.calls = 0

    def _start(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._loop.is_closed():
                loop = asyncio.new_event_loop()
                ready = threading.Event()

                def run() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                threading.Thread(target=run, name="hermes-env-sync-bridge", daemon=True).start()
                ready.wait()
                self._loop = loop
            return self._loop

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` to completion and return its result, blocking the calling thread."""
        self.calls += 1
        try:
            current = asyncio.get_running_loop()
        except RuntimeError:
            current = None
        loop = self._start()
        if current is loop:
            # A synchronous call made by code that itself runs on the helper loop: a fresh thread
            # with its own loop, so the helper is not waiting on itself.
            box: dict[str, Any] = {}

            def run_alone() -> None:
                try:
                    box["value"] = asyncio.run(coro)
                except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
                    box["error"] = exc

            thread = threading.Thread(target=run_alone, name="hermes-env-sync-bridge-nested", daemon=True)
            thread.start()
            thread.join()
            if "error" in box:
                raise box["error"]
            return box["value"]
        return asyncio.run_coroutine_threadsafe(coro, loop).result()


HELPER = HelperLoop()


def awaitable_or_sync(method: Callable[P, Coroutine[Any, Any, T]]) -> Callable[P, Any]:
    """Decorate an ``async def`` so that it can also be called without ``await`` (see the module doc)."""

    @functools.wraps(method)
    def call(*args: P.args, **kwargs: P.kwargs) -> Any:
        coro = method(*args, **kwargs)
        try:
            asyncio.get_running_loop()
            in_loop = True
        except RuntimeError:
            in_loop = False
        if in_loop and is_awaited_call(sys._getframe(1)):
            return coro
        result = HELPER.run(coro)
        return DONE if result is None else result

    return call


class AwaitableResult:
    """Mixin: awaiting a result that is already there gives it back.

    Hashed by identity (``asyncio.gather`` keys its arguments in a dict), although the dict and
    list results compare by value: keep them out of sets meant to deduplicate by content.
    """

    __hash__ = object.__hash__

    def __await__(self) -> Any:
        return _ready(self).__await__()


async def _ready(value: T) -> T:
    return value


class _Done(AwaitableResult):
    """What a method that returns nothing gives a synchronous caller: falsy, and awaitable."""

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "DONE"


DONE = _Done()
