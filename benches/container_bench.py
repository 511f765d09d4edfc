"""The docker backend on this machine: container start + first call, per-call overhead against bwrap at the same
load, and how many concurrent rollout containers the machine holds.

1. start: N fresh tasks one after another; each is ``run -d`` of a container plus its first call (``true``).
2. per call: C tasks at once, each making K calls of the same small command, on ``docker`` (containers already
   started: only calls are timed) and on ``bwrap``; per-call latency p50/p90 and calls/s, and the difference.
3. capacity: containers are started in steps (idle rollout containers, each with its init and keep-alive) up to
   ``--max-containers``; after each step the host's MemAvailable is read and every container runs one call at
   once (a round), so memory per container and the latency of a round at that count are measured. It stops early
   when MemAvailable falls below ``--reserve-gb`` or a round takes longer than ``--round-limit-s``.

Bounded: every phase has a size cap and the whole run a global timeout; every container is removed at the end
(and by the reaper if the bench is killed).

    python benches/container_bench.py                 # full: 10 starts, C=8 x K=20, up to 256 containers
    python benches/container_bench.py --quick         # seconds, for CI's smoke run
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from hermes_env.backends import get_backend
from hermes_env.backends.base import ExecutionBackend

GLOBAL_TIMEOUT_S = 1800.0
COMMAND = "echo hello >> log.txt && ls -la | wc -l > /dev/null && tail -n 1 log.txt"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))]


def mem_available_mb() -> float:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def rss_of_containers_mb(container_ids: list[str]) -> float:
    """Resident memory of every host process serving these containers: the processes in their cgroups and each
    one's engine monitor (conmon), whose command line names the container."""
    ids = tuple(container_ids)
    total_kb = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cgroup = (entry / "cgroup").read_text()
            cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
            if not any(cid in cgroup or (cid in cmdline and "conmon" in cmdline) for cid in ids):
                continue
            for line in (entry / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total_kb += int(line.split()[1])
        except OSError:
            continue
    return total_kb / 1024


def mem_total_mb() -> float:
    with open("/proc/meminfo") as f:
        return int(f.readline().split()[1]) / 1024


async def start_latency(n: int) -> dict[str, Any]:
    backend = get_backend("docker", memory_bytes="512MiB")
    try:
        await backend.execute("warm", "true", 30)  # the sweep and the reaper happen once per process, not per start
        await backend.cleanup("warm")
        totals, firsts = [], []
        for i in range(n):
            t0 = time.perf_counter()
            await backend.start(f"s{i}")
            t1 = time.perf_counter()
            res = await backend.execute(f"s{i}", "true", 30)
            t2 = time.perf_counter()
            assert res.ok, res
            totals.append(t2 - t0)
            firsts.append(t2 - t1)
            await backend.cleanup(f"s{i}")
    finally:
        await backend.aclose()
    return {
        "n": n,
        "start_plus_first_call_p50_s": statistics.median(totals),
        "start_plus_first_call_p90_s": percentile(totals, 90),
        "first_call_p50_s": statistics.median(firsts),
    }


async def _calls(backend: ExecutionBackend, concurrency: int, calls: int, prefix: str) -> dict[str, Any]:
    tasks = [f"{prefix}{i}" for i in range(concurrency)]
    await asyncio.gather(*(backend.execute(t, "true", 60) for t in tasks))  # start containers / workspaces
    latencies: list[float] = []

    async def one(task: str) -> None:
        for _ in range(calls):
            t0 = time.perf_counter()
            res = await backend.execute(task, COMMAND, 60)
            latencies.append(time.perf_counter() - t0)
            assert res.ok and res.output == "hello\n", res

    t0 = time.perf_counter()
    await asyncio.gather(*(one(t) for t in tasks))
    wall = time.perf_counter() - t0
    return {
        "calls": len(latencies),
        "p50_ms": 1000 * statistics.median(latencies),
        "p90_ms": 1000 * percentile(latencies, 90),
        "calls_per_s": len(latencies) / wall,
    }


async def per_call(concurrency: int, calls: int) -> dict[str, Any]:
    out: dict[str, Any] = {"concurrency": concurrency, "calls_per_task": calls}
    docker = get_backend("docker", memory_bytes="512MiB")
    try:
        out["docker"] = await _calls(docker, concurrency, calls, "d")
    finally:
        await docker.aclose()
    root = Path(tempfile.mkdtemp(prefix="hermes-bench-bwrap-"))
    root.chmod(0o711)
    bwrap = get_backend("bwrap", root=root / "ws")
    try:
        out["bwrap"] = await _calls(bwrap, concurrency, calls, "b")
    finally:
        await bwrap.aclose()
        shutil.rmtree(root, ignore_errors=True)
    out["overhead_p50_ms"] = out["docker"]["p50_ms"] - out["bwrap"]["p50_ms"]
    return out


async def capacity(max_containers: int, step: int, reserve_gb: float, round_limit_s: float) -> dict[str, Any]:
    backend = get_backend("docker", memory_bytes="512MiB", max_processes=64)
    steps: list[dict[str, Any]] = []
    baseline = mem_available_mb()
    stopped = f"reached --max-containers {max_containers}"
    started = 0
    gate = asyncio.Semaphore(8)  # starts at once: the engine serialises much of a start anyway

    async def start(i: int) -> None:
        async with gate:
            await backend.start(f"c{i}")

    try:
        while started < max_containers:
            batch = range(started, min(started + step, max_containers))
            t0 = time.perf_counter()

            await asyncio.gather(*(start(i) for i in batch))
            start_s = (time.perf_counter() - t0) / len(batch)
            started = batch[-1] + 1
            await asyncio.sleep(2)  # let the page cache and the engine settle before reading memory
            avail = mem_available_mb()
            ids = [box.cid for box in backend._containers.values()]  # type: ignore[attr-defined]
            rss = rss_of_containers_mb(ids)
            t0 = time.perf_counter()
            results = await asyncio.gather(*(backend.execute(f"c{i}", COMMAND, 120) for i in range(started)))
            round_s = time.perf_counter() - t0
            failed = sum(not r.ok for r in results)
            steps.append({
                "containers": started,
                "mem_available_mb": round(avail),
                "mem_used_per_container_mb": round((baseline - avail) / started, 2),
                "rss_per_container_mb": round(rss / started, 2),
                "start_s_per_container": round(start_s, 3),
                "round_s": round(round_s, 2),
                "round_calls_per_s": round(started / round_s, 1),
                "failed_calls": failed,
            })  # fmt: skip
            print(json.dumps(steps[-1]), file=sys.stderr, flush=True)
            if avail < reserve_gb * 1024:
                stopped = f"MemAvailable below {reserve_gb:g} GB"
                break
            if round_s > round_limit_s:
                stopped = f"a round took {round_s:.1f}s (> {round_limit_s:g}s)"
                break
    finally:
        await backend.aclose()
    last = steps[-1] if steps else {}
    # MemAvailable also moves with everything else on the machine; the larger of the two is the safer estimate.
    per = max(last.get("mem_used_per_container_mb", 0.0), last.get("rss_per_container_mb", 0.0), 0.01)
    total = mem_total_mb()
    return {
        "steps": steps,
        "stopped": stopped,
        "mem_total_mb": round(total),
        "mem_per_container_mb": per,
        "containers_by_memory_24gb": int((24 * 1024 - reserve_gb * 1024) / per),
    }


async def run_all(args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {}
    result["start"] = await start_latency(args.starts)
    print(json.dumps(result["start"]), file=sys.stderr, flush=True)
    result["per_call"] = [await per_call(c, args.calls) for c in args.concurrency]
    for row in result["per_call"]:
        print(json.dumps(row), file=sys.stderr, flush=True)
    result["capacity"] = await capacity(args.max_containers, args.step, args.reserve_gb, args.round_limit_s)
    return result


def report(result: dict[str, Any]) -> str:
    s = result["start"]
    lines = [
        f"container start + first call: p50 {s['start_plus_first_call_p50_s']:.2f}s, "
        f"p90 {s['start_plus_first_call_p90_s']:.2f}s (first call alone p50 {s['first_call_p50_s']:.2f}s; n={s['n']})",
        "",
        "| concurrency | docker p50 / p90 (ms) | bwrap p50 / p90 (ms) | docker calls/s | bwrap calls/s | overhead |",
        "|---|---|---|---|---|---|",
    ]
    for row in result["per_call"]:
        d, b = row["docker"], row["bwrap"]
        lines.append(
            f"| {row['concurrency']} | {d['p50_ms']:.0f} / {d['p90_ms']:.0f} | {b['p50_ms']:.0f} / {b['p90_ms']:.0f} "
            f"| {d['calls_per_s']:.1f} | {b['calls_per_s']:.1f} | {row['overhead_p50_ms']:+.0f} ms |"
        )
    cap = result["capacity"]
    lines += [
        "",
        "| containers | MemAvailable (MB) | MB each (MemAvailable / RSS) | start s | one call each (s) | calls/s |",
        "|---|---|---|---|---|---|",
    ]
    for st in cap["steps"]:
        lines.append(
            f"| {st['containers']} | {st['mem_available_mb']} | {st['mem_used_per_container_mb']} / "
            f"{st['rss_per_container_mb']} "
            f"| {st['start_s_per_container']} | {st['round_s']} | {st['round_calls_per_s']} |"
        )
    lines.append(
        f"stopped: {cap['stopped']}; at {cap['mem_per_container_mb']} MB per idle container, 24 GB hold about "
        f"{cap['containers_by_memory_24gb']} by memory"
    )
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="3 starts, C=2 x K=3, up to 8 containers")
    p.add_argument("--starts", type=int, default=10)
    p.add_argument("--calls", type=int, default=20)
    p.add_argument("--concurrency", type=int, nargs="+", default=[1, 8])
    p.add_argument("--max-containers", type=int, default=256)
    p.add_argument("--step", type=int, default=32)
    p.add_argument("--reserve-gb", type=float, default=4.0)
    p.add_argument("--round-limit-s", type=float, default=120.0)
    p.add_argument("--json", help="also write the results here")
    args = p.parse_args()
    if args.quick:
        args.starts, args.calls, args.concurrency, args.max_containers, args.step = 3, 3, [2], 8, 4
    result = asyncio.run(asyncio.wait_for(run_all(args), GLOBAL_TIMEOUT_S))
    print(report(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
