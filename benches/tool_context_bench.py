"""What a synchronous ToolContext call costs compared with an awaited one.

hermes-agent's reward code calls ``ctx.terminal(...)`` without ``await`` from inside
``async def compute_reward``. hermes_env runs such a call on a helper event loop in another thread
and blocks the caller until it is done (:mod:`hermes_env.sync_bridge`). This measures, per call:

- the bridge alone, on a backend that answers at once (an in-memory workspace): awaited, synchronous
  from inside a running loop, synchronous with no loop;
- a real ``terminal("true")`` on the ``local`` backend (a process per call), awaited and synchronous;
- how long the caller's event loop is blocked by one synchronous call (the largest gap a ticker
  running on that loop sees), which is what other rollouts of the process wait.

    python benches/tool_context_bench.py            # 2000 bridge calls, 200 terminal calls
    python benches/tool_context_bench.py --quick    # for CI
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from typing import Any

from hermes_env.backends.base import ExecResult, ExecutionBackend
from hermes_env.backends.local import LocalBackend
from hermes_env.tool_context import ToolContext


class MemoryBackend(ExecutionBackend):
    """Answers every call at once: what is left is the ToolContext and bridge overhead."""

    name = "memory"

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}

    async def execute(self, task_id: str, command: str, timeout: float, *, stdin: str | None = None) -> ExecResult:
        return ExecResult(output="ok\n", exit_code=0)

    async def read_file(self, task_id: str, path: str) -> bytes:
        return self.files[path]

    async def write_file(self, task_id: str, path: str, data: bytes) -> None:
        self.files[path] = data

    async def list_files(self, task_id: str, path: str = ".") -> list[str]:
        return sorted(self.files)

    async def cleanup(self, task_id: str) -> None:
        self.files.clear()


def _us(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1e6, ordered[int(0.99 * (len(ordered) - 1))] * 1e6


async def _awaited(ctx: ToolContext, n: int, command: str) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        await ctx.terminal(command)
        out.append(time.perf_counter() - t)
    return out


async def _sync_in_loop(ctx: ToolContext, n: int, command: str) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        result = ctx.terminal(command)  # no await: the helper loop runs it
        out.append(time.perf_counter() - t)
        assert result["exit_code"] == 0
    return out


def _sync_no_loop(ctx: ToolContext, n: int, command: str) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        ctx.terminal(command)
        out.append(time.perf_counter() - t)
    return out


async def _loop_blocked(ctx: ToolContext, n: int, command: str) -> float:
    """The longest the caller's loop went without running a ticker while synchronous calls ran."""
    gaps: list[float] = []
    stop = False

    async def ticker() -> None:
        last = time.perf_counter()
        while not stop:
            await asyncio.sleep(0)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    for _ in range(n):
        ctx.terminal(command)
        await asyncio.sleep(0)
    stop = True
    await task
    return max(gaps)


def measure(n_bridge: int, n_terminal: int) -> list[dict[str, Any]]:
    rows = []
    memory = ToolContext("bench", MemoryBackend())
    with tempfile.TemporaryDirectory() as root:
        local = ToolContext("bench", LocalBackend(root))
        for label, ctx, n, command in (
            ("bridge (in-memory backend)", memory, n_bridge, "true"),
            ("terminal('true'), local backend", local, n_terminal, "true"),
        ):
            _sync_no_loop(ctx, min(n, 50), command)  # warm up (starts the helper loop)
            awaited = asyncio.run(_awaited(ctx, n, command))
            in_loop = asyncio.run(_sync_in_loop(ctx, n, command))
            no_loop = _sync_no_loop(ctx, n, command)
            blocked = asyncio.run(_loop_blocked(ctx, min(n, 200), command))
            rows.append(
                {
                    "case": label,
                    "calls": n,
                    "awaited_p50_us": _us(awaited)[0],
                    "sync_in_loop_p50_us": _us(in_loop)[0],
                    "sync_in_loop_p99_us": _us(in_loop)[1],
                    "sync_no_loop_p50_us": _us(no_loop)[0],
                    "added_p50_us": _us(in_loop)[0] - _us(awaited)[0],
                    "loop_blocked_max_ms": blocked * 1e3,
                }
            )
    return rows


def run(quick: bool = False) -> dict[str, Any]:
    """Entry point for the benchmark runner."""
    return {"tool_context_sync": measure(200 if quick else 2000, 20 if quick else 200)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few calls, for CI")
    args = parser.parse_args(argv)
    rows = run(args.quick)["tool_context_sync"]
    print(f"python {sys.version.split()[0]}")
    header = (
        f"{'case':34} {'calls':>6} {'awaited p50':>12} {'sync-in-loop p50':>17} {'p99':>9} "
        f"{'sync no loop':>13} {'added':>9} {'loop blocked':>13}"
    )
    print(header)
    for r in rows:
        print(
            f"{r['case']:34} {r['calls']:>6} {r['awaited_p50_us']:>10.0f}us {r['sync_in_loop_p50_us']:>15.0f}us "
            f"{r['sync_in_loop_p99_us']:>7.0f}us {r['sync_no_loop_p50_us']:>11.0f}us {r['added_p50_us']:>7.0f}us "
            f"{r['loop_blocked_max_ms']:>10.1f} ms"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
