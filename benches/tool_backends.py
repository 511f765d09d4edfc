"""Per-call cost of the tool backends: ``terminal`` through the registry on ``local`` and ``bwrap``.

    .venv/bin/python benches/tool_backends.py [--calls 200] [--concurrency 32]

Sequential: one call at a time (latency p50/p99). Concurrent: ``--concurrency`` tasks each making
calls in turn (throughput in calls/s). Also times ``read_file``/``write_file`` (host-side, confined).
Numbers depend on the machine's load; compare backends from the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from hermes_env.backends import get_backend
from hermes_env.isolation import bwrap_problem
from hermes_env.tools import REGISTRY, ToolCallContext


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def bench(name: str, root: Path, calls: int, concurrency: int) -> dict[str, float]:
    backend = get_backend(name, root=root / name)
    terminal = REGISTRY.get("terminal")
    try:
        ctx = ToolCallContext("seq", backend, timeout=30)
        await terminal.run({"command": "true"}, ctx)  # warm-up, creates the workspace
        lat = []
        for _ in range(calls):
            t0 = time.perf_counter()
            await terminal.run({"command": "echo hello"}, ctx)
            lat.append(time.perf_counter() - t0)

        per_task = max(1, calls // concurrency)

        async def worker(i: int) -> None:
            c = ToolCallContext(f"c{i}", backend, timeout=60)
            for _ in range(per_task):
                await terminal.run({"command": "echo hello"}, c)

        t0 = time.perf_counter()
        await asyncio.gather(*(worker(i) for i in range(concurrency)))
        conc = time.perf_counter() - t0

        data = b"x" * 4096
        t0 = time.perf_counter()
        for i in range(calls):
            await backend.write_file("seq", f"f{i % 10}.txt", data)
            await backend.read_file("seq", f"f{i % 10}.txt")
        files = (time.perf_counter() - t0) / (2 * calls)
        return {
            "p50_ms": statistics.median(lat) * 1e3,
            "p99_ms": pct(lat, 0.99) * 1e3,
            "calls_per_s": per_task * concurrency / conc,
            "file_op_us": files * 1e6,
        }
    finally:
        await backend.aclose()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="hermes-bench-"))
    root.chmod(0o711)  # the bwrap sandbox uid must reach the workspaces
    names = ["local"] + (["bwrap"] if bwrap_problem() is None else [])
    if "bwrap" not in names:
        print(f"bwrap skipped: {bwrap_problem()}")
    print(f"{'backend':8} {'p50 ms':>8} {'p99 ms':>8} {'calls/s':>9} {'file op us':>11}   ({args.calls} calls)")
    try:
        for name in names:
            r = await bench(name, root, args.calls, args.concurrency)
            print(f"{name:8} {r['p50_ms']:8.1f} {r['p99_ms']:8.1f} {r['calls_per_s']:9.0f} {r['file_op_us']:11.0f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
