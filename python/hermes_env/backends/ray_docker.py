"""The ``docker`` backend over a Ray cluster (``terminal_backend_options: {ray_address: ...}``).

One Ray actor per alive node (hard node affinity, so the spread is exact), each owning a :class:`DockerBackend` on
its node's own container engine, with the other backend options and a ``hermes_env.node`` label naming the node on
every container. A rollout is placed on the node running the fewest rollouts when it starts and stays there; every
call of the rollout (commands, files, ``copy_in``, cleanup) goes to that node's actor. Directories copied in travel
as tar archives, so no node needs this machine's files. Work an environment needs done on the nodes themselves (the
Harbor environment builds its task images on every node, each with its own image cache) is a function sent to
them: :meth:`RayDockerBackend.on_every_node`, and :meth:`RayDockerBackend.use_on_node` for a rollout's own node.

A node (or its actor) that dies fails only the rollouts placed on it: their calls raise
:class:`ContainerLostError` (a ``BackendFailure``, so each group is dropped as ``sandbox_failed``), and new rollouts
go to the nodes still alive. Ray is connected to as the slot pool's Ray launcher does
(:func:`hermes_env.slot_pool.launchers.ray.connect`).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import shutil
import tarfile
import tempfile
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hermes_env.backends.base import ExecutionBackend
from hermes_env.containers.images import ImageSpec
from hermes_env.errors import ContainerLostError
from hermes_env.isolation.result import ExecResult
from hermes_env.isolation.roots import RunRoot
from hermes_env.slot_pool.launchers.ray import alive_nodes, connect, ray

#: The label on each container naming the Ray node whose actor started it.
NODE_LABEL = "hermes_env.node"
# Seconds a node's actor may take to start (importing hermes_env there) before that node counts as unusable.
_ACTOR_START_S = 120.0
# Calls one node's actor serves at once (each waits in a thread of its own for the backend's event loop).
_ACTOR_THREADS = 256


def pack_dir(path: str | os.PathLike[str]) -> bytes:
    """A directory's contents as an uncompressed tar archive (symlinks followed), to send to another node."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", dereference=True) as archive:
        archive.add(os.fspath(path), arcname=".")
    return buffer.getvalue()


def unpack_dir(data: bytes, target: Path) -> Path:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as archive:
        archive.extractall(target, filter="data")
    return target


class _NodeDockerActor:
    """Runs on one Ray node (a threaded actor): a docker backend on the node's engine, and the functions sent to it.

    A function sent with :meth:`run_here` is called as ``fn(node, *args)``; it may use ``node.backend``,
    ``node.files`` (a folder of this node's own) and ``node.state`` (a dict kept for the actor's life).

    The backend runs on an event loop of its own, a standard asyncio one in a thread of the actor: on the loop Ray
    gives async actors, ``podman run -d`` never reports its end to asyncio's subprocess (the container's monitor
    keeps the call waiting), so every container start hung there.
    """

    def __init__(self, backend_class: type[ExecutionBackend], options: dict[str, Any], node_id: str) -> None:
        asyncio.set_event_loop_policy(asyncio.DefaultEventLoopPolicy())  # Ray's lacks a child watcher
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="hermes-ray-docker", daemon=True)
        self._thread.start()
        self.backend: Any = backend_class(**options, labels={NODE_LABEL: node_id})
        self.node_id = node_id
        # The task folders copied here; a root of a run, so a killed actor's is swept by the node's next run.
        self._root = RunRoot("raydocker", mode=0o700)
        self.files = self._root.path
        self.state: dict[str, Any] = {}

    def node(self) -> str:
        return ray.get_runtime_context().get_node_id()

    def _run(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def call(self, method: str, *args: Any, **kwargs: Any) -> tuple[bool, Any]:
        return self._run(self._call(method, *args, **kwargs))

    def copy_in_archive(self, task_id: str, data: bytes, target: str) -> tuple[bool, Any]:
        return self._run(self._copy_in_archive(task_id, data, target))

    def run_here(self, fn: Callable[..., Any], *args: Any) -> tuple[bool, Any]:
        return self._run(self._run_here(fn, *args))

    async def _call(self, method: str, *args: Any, **kwargs: Any) -> tuple[bool, Any]:
        """``(True, result)`` or ``(False, the exception)``: the backend's own errors reach the caller as they are,
        not wrapped in Ray's."""
        try:
            result = getattr(self.backend, method)(*args, **kwargs)
            if asyncio.iscoroutine(result):
                result = await result
            return True, result
        except Exception as exc:
            return False, exc

    async def _copy_in_archive(self, task_id: str, data: bytes, target: str) -> tuple[bool, Any]:
        where = Path(tempfile.mkdtemp(dir=self.files))
        try:
            return await self._call("copy_in", task_id, unpack_dir(data, where), target)
        finally:
            shutil.rmtree(where, ignore_errors=True)

    async def _run_here(self, fn: Callable[..., Any], *args: Any) -> tuple[bool, Any]:
        try:
            result = fn(self, *args)
            if asyncio.iscoroutine(result):
                result = await result
            return True, result
        except Exception as exc:
            return False, exc

    def aclose(self) -> None:
        self._run(self.backend.aclose())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._root.remove()


class _Node:
    def __init__(self, node_id: str, actor: Any) -> None:
        self.node_id = node_id
        self.actor = actor
        self.dead: str | None = None  # why, once it died


class RayDockerBackend(ExecutionBackend):
    """The docker backend's containers spread over a Ray cluster's nodes; see the module's docs."""

    name = "docker"
    supports_images = True

    def __init__(
        self, *, ray_address: str, node_backend: type[ExecutionBackend], node_options: dict[str, Any] | None = None
    ) -> None:
        """``node_backend`` (the :class:`~hermes_env.backends.docker.DockerBackend`, which makes this backend when
        given ``ray_address``) runs on every node with ``node_options``."""
        self.ray_address = ray_address
        self.node_backend = node_backend
        self.node_options = dict(node_options or {})
        self.nodes: dict[str, _Node] = {}
        self._placed: dict[str, _Node] = {}
        self._load: Counter[str] = Counter()
        #: Rollouts placed on each node so far (kept after aclose: what ran where).
        self.placed_total: Counter[str] = Counter()
        self._pending: dict[str, tuple[str, tuple[Any, ...]]] = {}
        self._workspaces: dict[str, str] = {}
        self._connected_here = False
        self._started: asyncio.Lock | None = None

    @property
    def engine(self) -> Any:
        raise RuntimeError(
            "the docker backend over a Ray cluster has no container engine on this machine (each node runs its own); "
            "an environment that builds images itself cannot use ray_address: drop it from terminal_backend_options"
        )

    def describe(self) -> str:
        alive = sum(1 for n in self.nodes.values() if n.dead is None)
        return f"docker on a Ray cluster ({self.ray_address}, {alive} nodes)"

    def visible_roots(self, task_id: str) -> tuple[str, ...]:
        return (self._workspaces.get(task_id) or self.node_options.get("workspace", "/workspace"),)

    # -- nodes ----------------------------------------------------------------------------------------------------
    async def start_nodes(self) -> list[str]:
        """Connect to the cluster and start an actor on each alive node not yet used; the ids of the alive nodes."""
        if self._started is None:
            self._started = asyncio.Lock()
        async with self._started:
            if not self._connected_here and not ray.is_initialized():
                self._connected_here = connect(self.ray_address)  # in the main thread: Ray sets signal handlers
            actor_class = ray.remote(_NodeDockerActor)
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            for node_id in alive_nodes():
                if node_id in self.nodes:
                    continue
                actor = actor_class.options(
                    num_cpus=0, max_restarts=0, max_concurrency=_ACTOR_THREADS,
                    scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=node_id, soft=False),
                ).remote(self.node_backend, self.node_options, node_id)  # fmt: skip
                node = _Node(node_id, actor)
                try:
                    await asyncio.wait_for(actor.node.remote(), _ACTOR_START_S)
                except Exception as exc:  # the node cannot run it: leave it out
                    node.dead = f"its actor did not start: {exc}"
                    with contextlib.suppress(Exception):
                        ray.kill(actor, no_restart=True)
                self.nodes[node_id] = node
            return [n.node_id for n in self.nodes.values() if n.dead is None]

    def _choose(self) -> _Node:
        alive = [n for n in self.nodes.values() if n.dead is None]
        if not alive:
            reasons = "; ".join(f"{n.node_id[:12]}: {n.dead}" for n in self.nodes.values()) or "none started"
            raise ContainerLostError(f"no node of the Ray cluster at {self.ray_address} can run containers ({reasons})")
        return min(alive, key=lambda n: (self._load[n.node_id], n.node_id))

    async def _node_of(self, task_id: str) -> _Node:
        node = self._placed.get(task_id)
        if node is None:
            if not self.nodes:
                await self.start_nodes()
            node = self._placed[task_id] = self._choose()
            self._load[node.node_id] += 1
            self.placed_total[node.node_id] += 1
            pending = self._pending.pop(task_id, None)
            if pending is not None:
                await self._remote(task_id, node, pending[0], *pending[1])
        if node.dead is not None:
            raise ContainerLostError(f"the Ray node running task {task_id!r} is gone ({node.dead})")
        return node

    def node_of(self, task_id: str) -> str | None:
        """The id of the node ``task_id`` runs on (None before its first call)."""
        node = self._placed.get(task_id)
        return node.node_id if node else None

    async def _remote(self, task_id: str, node: _Node, method: str, *args: Any, **kwargs: Any) -> Any:
        try:
            ok, value = await getattr(node.actor, method).remote(*args, **kwargs)
        except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError) as exc:
            node.dead = f"its actor died: {str(exc).splitlines()[0]}"
            raise ContainerLostError(f"the Ray node running task {task_id!r} is gone ({node.dead})") from None
        if not ok:
            raise value
        return value

    async def _call(self, task_id: str, method: str, *args: Any, **kwargs: Any) -> Any:
        node = await self._node_of(task_id)
        return await self._remote(task_id, node, "call", method, task_id, *args, **kwargs)

    # -- the backend ----------------------------------------------------------------------------------------------
    def use_image(self, task_id: str, spec: ImageSpec | None, options: Any = None) -> None:
        if task_id in self._placed:
            raise RuntimeError(f"task {task_id!r} already has a container; name its image before its first use")
        self._pending[task_id] = ("call", ("use_image", task_id, spec, options))
        self._workspaces[task_id] = getattr(options, "workspace", None) or ""

    def use_on_node(self, task_id: str, workspace: str, fn: Callable[..., Any], *args: Any) -> None:
        """Before ``task_id``'s first call, on the node it is placed on: ``fn(node, task_id, *args)`` (which names its
        container's image there, e.g. one :meth:`on_every_node` built); its commands run in ``workspace``."""
        if task_id in self._placed:
            raise RuntimeError(f"task {task_id!r} already has a container; name its image before its first use")
        self._pending[task_id] = ("run_here", (fn, task_id, *args))
        self._workspaces[task_id] = workspace

    async def start(self, task_id: str) -> None:
        await self._call(task_id, "start")

    async def execute(self, task_id: str, command: str, timeout: float, *, stdin: str | None = None) -> ExecResult:
        return await self._call(task_id, "execute", command, timeout, stdin=stdin)

    async def read_file(self, task_id: str, path: str) -> bytes:
        return await self._call(task_id, "read_file", path)

    async def write_file(self, task_id: str, path: str, data: bytes) -> None:
        await self._call(task_id, "write_file", path, data)

    async def list_files(self, task_id: str, path: str = ".") -> list[str]:
        return await self._call(task_id, "list_files", path)

    async def copy_in(self, task_id: str, source: str | os.PathLike[str], target: str) -> None:
        """As :meth:`DockerBackend.copy_in`; the directory travels to the task's node as a tar archive."""
        data = await asyncio.to_thread(pack_dir, source)
        node = await self._node_of(task_id)
        await self._remote(task_id, node, "copy_in_archive", task_id, data, target)

    async def disconnect_network(self, task_id: str) -> None:
        await self._call(task_id, "disconnect_network")

    async def cleanup(self, task_id: str) -> None:
        self._pending.pop(task_id, None)
        self._workspaces.pop(task_id, None)
        node = self._placed.pop(task_id, None)
        if node is None:
            return
        self._load[node.node_id] -= 1
        if node.dead is None:
            with contextlib.suppress(ContainerLostError):  # a node dying now leaves nothing to clean here
                await self._remote(task_id, node, "call", "cleanup", task_id)

    async def on_every_node(self, fn: Callable[..., Any], *args: Any) -> list[Any]:
        """``fn(node, *args)`` on every alive node (see :class:`_NodeDockerActor`); per node, its result or the
        exception it raised."""
        nodes = [self.nodes[n] for n in await self.start_nodes()]
        if not nodes:
            raise ContainerLostError(f"no node of the Ray cluster at {self.ray_address} can run containers")
        return list(
            await asyncio.gather(
                *(self._remote(f"node {n.node_id[:12]}", n, "run_here", fn, *args) for n in nodes),
                return_exceptions=True,
            )
        )

    async def kill_node(self, node_id: str) -> None:
        """Kill ``node_id``'s actor (what a node's death does to its rollouts; for fault tests)."""
        ray.kill(self.nodes[node_id].actor, no_restart=True)

    async def aclose(self) -> None:
        nodes = list(self.nodes.values())
        self.nodes.clear()
        self._placed.clear()
        self._pending.clear()
        self._workspaces.clear()
        for node in nodes:
            if node.dead is None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(node.actor.aclose.remote(), 120)
            with contextlib.suppress(Exception):
                ray.kill(node.actor, no_restart=True)
        if self._connected_here and ray.is_initialized():
            ray.shutdown()
            self._connected_here = False
