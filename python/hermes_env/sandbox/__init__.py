"""Sandboxed tool execution at scale: a slot pool of sandbox workers, a batching executor, a tool server.

- :class:`SlotPool` leases slots (isolated workspaces) of sandbox worker processes to
  trajectories, scaling workers between ``min_workers`` and ``max_workers`` and replacing dead
  ones; workers run locally or as Ray actors spread over a cluster's nodes.
- :class:`ToolExecutor` batches tool calls per worker and returns results in order.
- :class:`SandboxBackend` plugs both into the environment framework as terminal backend ``sandbox``.

Example::

    from hermes_env.sandbox import PoolConfig, SandboxPolicy, SlotPool, ToolExecutor

    pool = SlotPool(PoolConfig(slots_per_worker=32, max_workers=8), SandboxPolicy(allow_network=False))
    async with pool, ToolExecutor(pool) as ex:
        r = await ex.execute("traj-1", "bash", {"command": "python3 -V"}, timeout=30)
        await ex.release_trajectory("traj-1")

In an environment's config: ``terminal_backend: sandbox`` with ``terminal_backend_options``
such as ``{slots_per_worker: 32, max_workers: 8, backend: ray, ray_address: "auto"}``.
Workers run as root drop each slot to its own uid (per-slot process limits); run as an
ordinary user, all slots share that user's process limit.
"""

from __future__ import annotations

from hermes_env.backends.registry import register_backend
from hermes_env.sandbox.backend import SandboxBackend, create_backend
from hermes_env.sandbox.config import ExecutorConfig, PoolConfig, ResourceLimits, SandboxPolicy
from hermes_env.sandbox.executor import ToolExecutor, decode_content
from hermes_env.sandbox.pool import Lease, PoolClosedError, SlotAcquireTimeout, SlotPool
from hermes_env.sandbox.protocol import ToolResult
from hermes_env.sandbox.workers import WorkerStartError

__all__ = [
    "ExecutorConfig",
    "Lease",
    "PoolClosedError",
    "PoolConfig",
    "ResourceLimits",
    "SandboxBackend",
    "SandboxPolicy",
    "SlotAcquireTimeout",
    "SlotPool",
    "ToolExecutor",
    "ToolResult",
    "WorkerStartError",
    "create_backend",
    "decode_content",
]

register_backend("sandbox", create_backend, replace=True)
