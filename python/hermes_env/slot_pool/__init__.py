"""Sandboxed tool execution at scale: a slot pool of sandbox workers, a batching executor, a tool server.

- :class:`SlotPool` leases slots (isolated workspaces) of sandbox worker processes to
  trajectories, scaling workers between ``min_workers`` and ``max_workers`` and replacing dead
  ones; a launcher starts the workers as local processes or as Ray actors spread over a cluster.
- :class:`ToolExecutor` batches tool calls per worker and returns results in order.
- The ``sandbox`` terminal backend (``hermes_env.backends.sandbox.SandboxBackend``, above this
  package) plugs both into the environment framework.

Example::

    from hermes_env.slot_pool import PoolConfig, SandboxPolicy, SlotPool, ToolExecutor

    pool = SlotPool(PoolConfig(slots_per_worker=32, max_workers=8), SandboxPolicy(allow_network=False))
    async with pool, ToolExecutor(pool) as ex:
        r = await ex.execute("traj-1", "bash", {"command": "python3 -V"}, timeout=30)
        await ex.release_trajectory("traj-1")

In an environment's config: ``terminal_backend: sandbox`` with ``terminal_backend_options``
such as ``{slots_per_worker: 32, max_workers: 8, launcher: ray, ray_address: "auto"}``.
Commands are sandboxed by the isolation layer (``hermes_env.isolation``): workers run as root
give each slot its own uid and a size-limited workspace; run as an ordinary user, all slots
share that user (and its process limit) and workspaces have no quota.
"""

from __future__ import annotations

from typing import Any

from hermes_env._renamed import old_names
from hermes_env.isolation.limits import ResourceLimits
from hermes_env.slot_pool.config import ExecutorConfig, PoolConfig, SandboxPolicy
from hermes_env.slot_pool.executor import ToolExecutor, decode_content
from hermes_env.slot_pool.pool import Lease, SlotPool

__all__ = [
    "ExecutorConfig",
    "Lease",
    "PoolConfig",
    "ResourceLimits",
    "SandboxPolicy",
    "SlotPool",
    "ToolExecutor",
    "decode_content",
]


# Exceptions live in hermes_env.errors, and ``ToolResult`` was this package's name for the isolation layer's
# ExecResult (hermes_env.agent_env.ToolResult is another thing); the old names still work for a release
# (hermes_env._renamed.OLD_NAMES), each with a warning once.
_old_names = old_names(__name__)


def __getattr__(name: str) -> Any:
    if name == "SandboxBackend":  # the backend sits above this package (it imports it), so it is not re-exported
        raise AttributeError(
            "hermes_env.slot_pool no longer exports SandboxBackend: import it from hermes_env.backends.sandbox"
        )
    return _old_names(name)
