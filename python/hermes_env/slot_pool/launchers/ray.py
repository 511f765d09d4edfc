"""``ray`` launcher: workers as Ray actors spread over the nodes of a Ray cluster.

Each actor runs a ``local`` launcher worker on its node (one ``hermes_env.slot_pool.server``
process) and reports the server's URL on the node's address, its pid and the node id;
the executor then talks HTTP to the server directly, so tool traffic never goes through Ray's
object store. Adding capacity means adding nodes to the cluster: the pool code is unchanged.

Placement: ``node_affinity`` (default) puts each new worker on the alive node holding the
fewest of this pool's workers (hard affinity, so the spread is exact); ``spread`` leaves it
to Ray's ``SPREAD`` strategy, which only spreads actors that request a resource, so those
actors ask for a token 0.001 CPU. Otherwise actors reserve no CPU: sandboxed commands are
ordinary processes on the node, limited by the sandbox's rlimits rather than Ray resources.

The server listens on the node's Ray address. In tests every node runs with
``--node-ip-address 127.0.0.1``, so everything stays on loopback; on a real cluster the
servers are reachable on the cluster's network and check the pool's shared secret.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from pathlib import Path
from typing import Any

from hermes_env.errors import WorkerStartError
from hermes_env.slot_pool.config import PoolConfig, SandboxPolicy
from hermes_env.slot_pool.launchers.base import WorkerHandle, WorkerLauncher, WorkerSpec, kill_worker_uids
from hermes_env.slot_pool.launchers.local import LocalWorker

try:  # Ray is an optional dependency (pip install 'hermes_env[cluster]')
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
except ImportError:  # pragma: no cover - exercised only without ray installed
    ray = None


def connect(address: str | None) -> bool:
    """Connect this process to the Ray cluster at ``address`` (None: ``auto``) unless it already is; whether it
    connected now (then the caller shuts Ray down when done). WorkerStartError saying how to start one."""
    if ray is None:
        raise WorkerStartError("running on a Ray cluster needs Ray: pip install 'hermes_env[cluster]'")
    if ray.is_initialized():
        return False
    address = address or "auto"
    try:
        ray.init(address=address, logging_level="WARNING", log_to_driver=False)
    except Exception as exc:
        raise WorkerStartError(
            f"could not connect to the Ray cluster at {address!r}: {exc}; start one with "
            "`ray start --head`, or name a running one with ray_address (in env.terminal_backend_options)"
        ) from exc
    return True


def alive_nodes() -> list[str]:
    """The ids of the cluster's alive nodes."""
    return [n["NodeID"] for n in ray.nodes() if n.get("Alive")]


class _SandboxWorkerActor:
    """Runs on a Ray node (an async actor): a ``local`` launcher worker there owns the sandbox server."""

    def __init__(self) -> None:
        self._worker: LocalWorker | None = None

    async def start(self, spec: dict[str, Any], worker_id: str, secret: str | None) -> dict[str, Any]:
        ws = WorkerSpec(
            index=spec["index"],
            slots=spec["slots"],
            policy=SandboxPolicy.model_validate(spec["policy"]),
            root=Path(spec["root"]),
            start_timeout_s=spec["start_timeout_s"],
            secret=secret,
            uid_base=spec["uid_base"],
        )
        node_id = ray.get_runtime_context().get_node_id()
        # The address this node joined the cluster with (``--node-ip-address``), not a guess from routing.
        host = next(
            (n["NodeManagerAddress"] for n in ray.nodes() if n["NodeID"] == node_id), ray.util.get_node_ip_address()
        )
        self._worker = LocalWorker(ws, host=host)
        self._worker.worker_id = worker_id
        await self._worker.start()
        return {"url": self._worker.url, "pid": self._worker.pid, "node_id": node_id}

    async def stop(self) -> None:
        """Graceful: SIGTERM, and after 10 s what :meth:`kill_server` does."""
        if self._worker is not None:
            await self._worker.stop()

    async def kill_server(self) -> None:
        """Kill the server, every sandbox it runs and whatever its slots' users left, on this node."""
        if self._worker is None:
            return
        if self._worker.process_alive():
            await self._worker.kill()  # the uids' processes included
        else:
            await asyncio.to_thread(kill_worker_uids, self._worker.spec)


class RayWorker(WorkerHandle):
    def __init__(self, spec: WorkerSpec, launcher: RayLauncher) -> None:
        super().__init__(spec)
        self._launcher = launcher
        self._actor: Any = None
        self._dead = False
        self._counted_node: str | None = None  # the node this worker is counted on for placement

    async def start(self) -> None:
        node = self._launcher.choose_node()
        self._counted_node = node
        options: dict[str, Any] = {"num_cpus": 0, "max_restarts": 0, "name": None}
        if node is not None:
            options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node_id=node, soft=False)
        else:
            # Ray's SPREAD only spreads actors that ask for some resource; a token CPU share does it.
            options["scheduling_strategy"] = "SPREAD"
            options["num_cpus"] = 0.001
        self._actor = self._launcher.actor_class.options(**options).remote()
        spec = {
            "index": self.spec.index,
            "slots": self.spec.slots,
            "policy": self.spec.policy.model_dump(),
            "root": str(self.spec.root),
            "start_timeout_s": self.spec.start_timeout_s,
            "uid_base": self.spec.uid_base,
        }
        try:
            info = await asyncio.wait_for(
                self._actor.start.remote(spec, self.worker_id, self.spec.secret), self.spec.start_timeout_s
            )
        except TimeoutError as exc:
            await self.kill()
            raise WorkerStartError(
                f"Ray worker {self.worker_id} did not start its sandbox server within {self.spec.start_timeout_s:g}s"
            ) from exc
        except Exception as exc:  # RayActorError, RayTaskError wrapping WorkerStartError ...
            await self.kill()
            raise WorkerStartError(f"Ray worker {self.worker_id} failed to start: {exc}") from exc
        self.url = info["url"]
        self.node_id = info["node_id"]
        self.pid = info["pid"]
        if self._counted_node is None:
            self._counted_node = self.node_id
            self._launcher.placed(self.node_id)

    def process_alive(self) -> bool:
        return not self._dead and self._actor is not None

    async def stop(self) -> None:
        if self._actor is None or self._dead:
            return
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._actor.stop.remote(), 15)
        await self.kill()

    async def kill(self) -> None:
        if self._actor is not None and not self._dead:
            with contextlib.suppress(Exception):  # the actor (or its node) may be gone already
                await asyncio.wait_for(self._actor.kill_server.remote(), 10)
            with contextlib.suppress(Exception):
                ray.kill(self._actor, no_restart=True)
        if self._counted_node is not None:
            self._launcher.removed(self._counted_node)
            self._counted_node = None
        self._dead = True


class RayLauncher(WorkerLauncher):
    def __init__(self, config: PoolConfig) -> None:
        if ray is None:
            raise WorkerStartError("the ray launcher needs Ray: pip install 'hermes_env[cluster]'")
        self.config = config
        self._counts: Counter[str] = Counter()
        self._connected_here = False
        self._actor_class: Any = None

    @property
    def actor_class(self) -> Any:
        if self._actor_class is None:
            self._connected_here = connect(self.config.ray_address)
            self._actor_class = ray.remote(_SandboxWorkerActor)
        return self._actor_class

    def choose_node(self) -> str | None:
        """The alive node with the fewest of our workers (None: let Ray's SPREAD decide)."""
        _ = self.actor_class  # connects
        if self.config.ray_placement == "spread":
            return None
        nodes = alive_nodes()
        if not nodes:
            return None
        node = min(nodes, key=lambda n: (self._counts[n], n))
        self._counts[node] += 1  # counted now so concurrent starts spread too
        return node

    def placed(self, node_id: str) -> None:
        self._counts[node_id] += 1

    def removed(self, node_id: str) -> None:
        self._counts[node_id] -= 1

    def create(self, spec: WorkerSpec) -> WorkerHandle:
        return RayWorker(spec, self)

    async def aclose(self) -> None:
        if self._connected_here and ray.is_initialized():
            ray.shutdown()
