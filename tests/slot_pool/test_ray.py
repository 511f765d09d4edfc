"""The Ray backend on a real two-node Ray cluster bound to 127.0.0.1 (:mod:`tests.slot_pool.ray_loopback_cluster`)."""

from __future__ import annotations

import os
import signal

import pytest
from hermes_env.slot_pool import ExecutorConfig, PoolConfig, SandboxPolicy, SlotPool, ToolExecutor
from hermes_env.slot_pool.config import ResourceLimits

from tests.slot_pool.ray_loopback_cluster import ray_cluster

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.ray
__all__ = ["ray_cluster"]


def _alive_nodes() -> set[str]:
    return {n["NodeID"] for n in ray.nodes() if n.get("Alive")}


async def test_slots_land_on_both_nodes(ray_cluster: str) -> None:
    config = PoolConfig(
        launcher="ray", ray_address=ray_cluster, slots_per_worker=2, min_workers=2, max_workers=4,
        health_interval_s=1.0, worker_start_timeout_s=180, acquire_timeout_s=180,
    )  # fmt: skip
    policy = SandboxPolicy(limits=ResourceLimits(max_processes=32))
    async with SlotPool(config, policy) as pool, ToolExecutor(pool, ExecutorConfig(max_timeout_s=60)) as ex:
        nodes = _alive_nodes()
        assert len(nodes) == 2
        assert {w.node_id for w in pool.workers} == nodes  # one worker per node
        assert all(w.url.startswith("http://127.0.0.1:") for w in pool.workers), [w.url for w in pool.workers]

        trajectories = [f"ray-{i}" for i in range(4)]
        results = [await ex.execute(t, "bash", {"command": f"echo {t} > f; cat f; pwd"}) for t in trajectories]
        for t, r in zip(trajectories, results, strict=True):
            assert r.ok and r.output.split() == [t, "/workspace"], r
        used_nodes = {r.data["node_id"] for r in results}
        assert used_nodes == nodes  # the trajectories' slots are on both nodes

        # Scaling up over capacity adds workers on the cluster, again spread over the nodes.
        more = [await ex.execute(f"extra-{i}", "bash", {"command": "echo hi"}) for i in range(2)]
        assert all(r.ok for r in more)
        assert len(pool.workers) == 3
        by_node = [w.node_id for w in pool.workers]
        assert sorted(by_node.count(n) for n in nodes) == [1, 2]

        # A worker whose server dies is replaced; its trajectory continues in a fresh slot.
        victim = pool.lease_of("ray-0")
        assert victim is not None
        handle = pool.worker(victim.worker_id)
        assert handle is not None and handle.pid is not None
        os.kill(handle.pid, signal.SIGKILL)
        first = await ex.execute("ray-0", "bash", {"command": "cat f"})
        if first.error_type == "worker_lost":  # the call noticed the death before the health loop did
            first = await ex.execute("ray-0", "bash", {"command": "cat f"})
        assert first.data.get("workspace_replaced") is True and "No such file" in first.output
        assert victim.worker_id not in {w.worker_id for w in pool.workers}


async def test_spread_placement_also_uses_every_node(ray_cluster: str) -> None:
    config = PoolConfig(
        launcher="ray", ray_address=ray_cluster, ray_placement="spread", slots_per_worker=1, min_workers=2,
        max_workers=2, worker_start_timeout_s=180,
    )  # fmt: skip
    async with SlotPool(config, SandboxPolicy(limits=ResourceLimits(max_processes=32))) as pool:
        assert {w.node_id for w in pool.workers} == _alive_nodes()
