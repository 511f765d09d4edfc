"""Sandbox pool throughput: many concurrent trajectories of `bash` calls through the ToolExecutor.

Full run: 256 concurrent trajectories x 20 calls each, local backend. Every call must succeed
and the whole run must finish inside a global timeout (no deadlock). Reports calls/s, p50/p99
latency of a call as the agent sees it, and the overhead per call over running the very same
commands directly with bubblewrap (same argv, limits and user), both one at a time and at the
same concurrency; and what the sandbox's seccomp filter costs a call (direct bubblewrap with and
without it, alternating, one at a time).

    python benches/sandbox_bench.py            # full (256 x 20)
    python benches/sandbox_bench.py --quick    # 16 x 3, for CI
    run(quick=True) -> dict                    # for the benchmark runner
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

from hermes_env.isolation.bubblewrap import HOST_ENV, SECCOMP_FD, BwrapSpec
from hermes_env.isolation.paths import empty_dir
from hermes_env.isolation.process import run_limited
from hermes_env.isolation.users import UidBlock
from hermes_env.slot_pool import ExecutorConfig, PoolConfig, SandboxPolicy, SlotPool, ToolExecutor

GLOBAL_TIMEOUT_S = 900.0
# Raw per-call latencies of the last run (seconds), kept out of run()'s summary for --plot.
_LAST_LATENCIES: dict[str, list[float]] = {}
SLOTS_PER_WORKER = 32


def command(traj: int, call: int) -> str:
    """A small, realistic tool call: write, list, read back."""
    return f"echo t{traj}-c{call} >> log.txt && ls -la | wc -l > /dev/null && tail -n 1 log.txt"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))
    return ordered[k]


def _without_filter(argv: list[str]) -> list[str]:
    """A bwrap command line less its seccomp filter (only to measure what the filter costs)."""
    at = argv.index(SECCOMP_FD)
    return argv[: at - 1] + argv[at + 1 :]


async def _direct_calls(
    n_traj: int, n_calls: int, concurrency: int, policy: SandboxPolicy, *, unfiltered_too: bool = False
) -> list[float]:
    """The same commands run directly with bubblewrap (no server, no HTTP, no batching), with the same
    sandbox, limits and user per workspace as the pool's slots; workspaces are plain directories (the
    pool's quota-limited tmpfs workspaces count as part of its overhead).

    ``unfiltered_too``: each call is paired with the same call without the seccomp filter, whose
    latencies go to ``_LAST_LATENCIES["direct_unfiltered"]``."""
    root = Path(tempfile.mkdtemp(prefix="hermes-bench-direct-"))
    root.chmod(0o711)
    gate = asyncio.Semaphore(concurrency)
    uids = UidBlock()  # its own task uids, never those of a pool running beside it
    limits = policy.limits
    latencies: list[float] = []
    unfiltered: list[float] = []

    async def one_traj(t: int) -> None:
        ws = root / str(t)
        user = uids.user(t)  # one user per workspace, as the pool's slots have
        empty_dir(ws, user.owner)
        spec = BwrapSpec(str(ws), tmp_bytes=int(limits.tmp_bytes))
        for c in range(n_calls):
            argv = limits.prlimit_argv() + spec.argv(["/bin/bash", "-c", command(t, c)])
            variants = [(argv, latencies)]
            if unfiltered_too:  # alternating which goes first, so neither gets the warmer caches
                variants.insert(c % 2, (_without_filter(argv), unfiltered))
            for variant, into in variants:
                async with gate:
                    start = time.perf_counter()
                    r = await run_limited(
                        variant,
                        cwd=str(ws),
                        env=HOST_ENV,
                        timeout=60,
                        max_output_bytes=int(limits.max_output_bytes),
                        kill_output_bytes=int(limits.kill_output_bytes),
                        user=user,
                    )
                    into.append(time.perf_counter() - start)
                if r.exit_code != 0 or r.output.strip() != f"t{t}-c{c}":
                    raise RuntimeError(f"direct bwrap call failed: {r.output!r}")

    try:
        await asyncio.gather(*(one_traj(t) for t in range(n_traj)))
    finally:
        uids.release()
        shutil.rmtree(root, ignore_errors=True)
    if unfiltered_too:
        _LAST_LATENCIES["direct_unfiltered"] = unfiltered
    return latencies


async def _executor_calls(ex: ToolExecutor, n_traj: int, n_calls: int, prefix: str) -> list[float]:
    latencies: list[float] = []

    async def one_traj(t: int) -> None:
        tid = f"{prefix}-{t}"
        for c in range(n_calls):
            start = time.perf_counter()
            r = await ex.execute(tid, "bash", {"command": command(t, c)}, timeout=120)
            latencies.append(time.perf_counter() - start)
            if not r.ok or r.output.strip() != f"t{t}-c{c}":
                raise RuntimeError(f"call {c} of trajectory {tid} failed: {r.output!r} ({r.error})")
        await ex.release_trajectory(tid)

    await asyncio.gather(*(one_traj(t) for t in range(n_traj)))
    return latencies


async def _bench(n_traj: int, n_calls: int, baseline_calls: int) -> dict[str, Any]:
    policy = SandboxPolicy()
    workers = max(1, math.ceil(n_traj / SLOTS_PER_WORKER))
    pool_cfg = PoolConfig(
        slots_per_worker=SLOTS_PER_WORKER, min_workers=workers, max_workers=workers, acquire_timeout_s=GLOBAL_TIMEOUT_S
    )
    t0 = time.perf_counter()
    pool = SlotPool(pool_cfg, policy)
    await pool.start()
    startup = time.perf_counter() - t0
    try:
        async with ToolExecutor(pool, ExecutorConfig(batch_window_ms=5, max_batch_size=64, max_timeout_s=120)) as ex:
            seq = await _executor_calls(ex, 1, baseline_calls, "seq")
            direct_seq = await _direct_calls(1, baseline_calls, 1, policy, unfiltered_too=True)
            unfiltered_seq = _LAST_LATENCIES.pop("direct_unfiltered")
            b0, c0 = ex.batches_sent, ex.calls_sent
            start = time.perf_counter()
            lat = await _executor_calls(ex, n_traj, n_calls, "load")
            wall = time.perf_counter() - start
            batches, calls = ex.batches_sent - b0, ex.calls_sent - c0
        start = time.perf_counter()
        direct_lat = await _direct_calls(n_traj, n_calls, n_traj, policy)
        direct_wall = time.perf_counter() - start
    finally:
        await pool.close()
    total = n_traj * n_calls
    ms = 1000.0
    _LAST_LATENCIES.update(executor=lat, direct=direct_lat)
    return {
        "trajectories": n_traj,
        "calls_per_trajectory": n_calls,
        "calls": total,
        "completed": len(lat),
        "workers": workers,
        "slots_per_worker": SLOTS_PER_WORKER,
        "pool_startup_s": round(startup, 3),
        "wall_s": round(wall, 3),
        "calls_per_s": round(total / wall, 1),
        "p50_ms": round(percentile(lat, 50) * ms, 2),
        "p99_ms": round(percentile(lat, 99) * ms, 2),
        "mean_batch_size": round(calls / max(batches, 1), 2),
        "direct_bwrap_wall_s": round(direct_wall, 3),
        "direct_bwrap_calls_per_s": round(total / direct_wall, 1),
        "direct_bwrap_p50_ms": round(percentile(direct_lat, 50) * ms, 2),
        "overhead_per_call_at_load_ms": round((wall - direct_wall) / total * ms, 3),
        "sequential_executor_ms": round(statistics.mean(seq) * ms, 2),
        "sequential_direct_bwrap_ms": round(statistics.mean(direct_seq) * ms, 2),
        "overhead_per_call_sequential_ms": round((statistics.mean(seq) - statistics.mean(direct_seq)) * ms, 2),
        "sequential_direct_bwrap_unfiltered_ms": round(statistics.mean(unfiltered_seq) * ms, 2),
        "seccomp_filter_cost_per_call_ms": round(
            (statistics.mean(direct_seq) - statistics.mean(unfiltered_seq)) * ms, 3
        ),
        "seccomp_filter_cost_per_call_p50_ms": round(
            (percentile(direct_seq, 50) - percentile(unfiltered_seq, 50)) * ms, 3
        ),
    }


def run(quick: bool = False) -> dict[str, Any]:
    """Run the benchmark; raises if any call fails or the run exceeds the global timeout."""
    n_traj, n_calls, baseline = (16, 3, 40) if quick else (256, 20, 100)
    try:
        return asyncio.run(asyncio.wait_for(_bench(n_traj, n_calls, baseline), GLOBAL_TIMEOUT_S))
    except TimeoutError as exc:
        raise RuntimeError(f"sandbox bench did not finish within {GLOBAL_TIMEOUT_S:g}s (deadlock or overload)") from exc


def _print(result: dict[str, Any]) -> None:
    rows = [
        ("trajectories x calls", f"{result['trajectories']} x {result['calls_per_trajectory']} = {result['calls']}"),
        ("completed", f"{result['completed']} (all ok)"),
        (
            "workers x slots",
            f"{result['workers']} x {result['slots_per_worker']} (started in {result['pool_startup_s']}s)",
        ),
        ("wall", f"{result['wall_s']} s"),
        ("throughput", f"{result['calls_per_s']} calls/s"),
        ("latency p50 / p99", f"{result['p50_ms']} / {result['p99_ms']} ms"),
        ("mean /batch size", f"{result['mean_batch_size']}"),
        (
            "direct bwrap, same load",
            f"{result['direct_bwrap_calls_per_s']} calls/s, p50 {result['direct_bwrap_p50_ms']} ms",
        ),
        ("overhead per call at load", f"{result['overhead_per_call_at_load_ms']} ms"),
        (
            "one call alone: executor / bwrap",
            f"{result['sequential_executor_ms']} / {result['sequential_direct_bwrap_ms']} ms",
        ),
        ("overhead per call, sequential", f"{result['overhead_per_call_sequential_ms']} ms"),
        (
            "seccomp filter per call (mean / p50)",
            f"{result['seccomp_filter_cost_per_call_ms']} / {result['seccomp_filter_cost_per_call_p50_ms']} ms "
            f"(bwrap alone {result['sequential_direct_bwrap_ms']} ms with, "
            f"{result['sequential_direct_bwrap_unfiltered_ms']} ms without)",
        ),
    ]
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")


def plot(path: Path, result: dict[str, Any]) -> None:
    """Latency CDF of a call through the pool and of the same command run directly with bubblewrap."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for label, key in (("through the pool (executor)", "executor"), ("direct bubblewrap", "direct")):
        values = sorted(v * 1000 for v in _LAST_LATENCIES.get(key, []))
        if values:
            ax.plot(values, [(i + 1) / len(values) for i in range(len(values))], label=label)
    ax.set_xlabel("latency per call (ms)")
    ax.set_ylabel("fraction of calls")
    ax.set_title(
        f"{result['trajectories']} concurrent trajectories x {result['calls_per_trajectory']} bash calls: "
        f"{result['calls_per_s']} calls/s"
    )
    ax.grid(alpha=0.3)
    ax.legend()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="16 trajectories x 3 calls")
    p.add_argument("--json", type=Path, help="also write the result as JSON here")
    p.add_argument("--plot", type=Path, help="also write a latency CDF (PNG) here")
    args = p.parse_args()
    result = run(quick=args.quick)
    _print(result)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    if args.plot:
        plot(args.plot, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
