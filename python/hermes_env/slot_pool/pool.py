"""SlotPool: sandbox workers holding slots, leased to trajectories.

- ``acquire(trajectory_id)`` returns the trajectory's lease if it has one (affinity), else a
  free slot, preferring the worker that served this trajectory before, then the least busy.
- When an acquisition has to wait, the pool starts another worker (up to ``max_workers``);
  workers with no leases for ``scale_down_cooldown_s`` stop (down to ``min_workers``).
- A health loop checks every worker; a dead or hung one is killed and replaced, and the
  leases it held are dropped, so the trajectory's next call gets a fresh slot elsewhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import aiohttp

from hermes_env.errors import PoolClosedError, SlotAcquireTimeout, WorkerStartError
from hermes_env.isolation import reaper
from hermes_env.isolation.roots import RunRoot, sweep_dead_runs
from hermes_env.isolation.users import SLOT_UID_BASE, UidBlock
from hermes_env.slot_pool.config import PoolConfig, SandboxPolicy
from hermes_env.slot_pool.launchers import create_launcher
from hermes_env.slot_pool.launchers.base import SECRET_HEADER, WorkerHandle, WorkerLauncher, WorkerSpec
from hermes_env.slot_pool.lifecycle import AsyncService, cancel_and_wait

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Lease:
    trajectory_id: str
    worker_id: str
    url: str
    slot: int
    node_id: str | None


@dataclass
class _Worker:
    handle: WorkerHandle
    free: set[int]
    leased: dict[int, str] = field(default_factory=dict)  # slot -> trajectory id
    resetting: int = 0
    idle_since: float = field(default_factory=time.monotonic)
    failures: int = 0


class SlotPool(AsyncService):
    def __init__(
        self,
        config: PoolConfig | None = None,
        policy: SandboxPolicy | None = None,
        *,
        launcher: WorkerLauncher | None = None,
    ) -> None:
        self.config = config or PoolConfig()
        self.policy = policy or SandboxPolicy()
        self._launcher = launcher or create_launcher(self.config)
        self._run_root: RunRoot | None = None
        self._root = Path(self.config.root_dir) if self.config.root_dir else Path()  # set in start()
        self._workers: dict[str, _Worker] = {}
        self._leases: dict[str, Lease] = {}
        self._affinity: dict[str, str] = {}  # trajectory -> worker that served it last
        self._lost: dict[str, str] = {}  # trajectory -> why its workspace was lost
        self._starting = 0
        self._waiters = 0
        self._cond = asyncio.Condition()
        self._index = itertools.count()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._health_task: asyncio.Task[None] | None = None
        self._session: aiohttp.ClientSession | None = None
        self._last_start_error: str | None = None
        self._closed = False
        self._started = False
        # Shared with every worker; sent by the executor so nothing else can drive a sandbox server.
        self._secret = secrets.token_hex(16)
        self._uids: UidBlock | None = None

    @property
    def auth_headers(self) -> dict[str, str]:
        """Headers a client needs to call this pool's sandbox servers."""
        return {SECRET_HEADER: self._secret}

    # -- lifecycle -------------------------------------------------------------------------
    async def start(self) -> None:
        """Start ``min_workers`` workers and the health loop (raises WorkerStartError if one cannot start)."""
        if self._started:
            return
        self._started = True
        # Sandboxes of a worker that dies come to this process (local workers are its children) and are reaped here.
        reaper.start()
        if self.config.root_dir is None:
            sweep_dead_runs()
            self._run_root = RunRoot("sandbox")
            self._root = self._run_root.path
        self._uids = UidBlock()  # slot uids no other run on this host uses
        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30), headers=self.auth_headers)
        results = await asyncio.gather(
            *(self._start_worker() for _ in range(self.config.min_workers)), return_exceptions=True
        )
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            await self.close()
            raise errors[0]
        self._health_task = asyncio.create_task(self._health_loop())

    async def close(self) -> None:
        self._closed = True
        await cancel_and_wait(self._health_task)
        for t in list(self._tasks):
            t.cancel()
        await asyncio.gather(*(w.handle.stop() for w in self._workers.values()), return_exceptions=True)
        self._workers.clear()
        self._leases.clear()
        async with self._cond:
            self._cond.notify_all()
        if self._session is not None:
            await self._session.close()
        await self._launcher.aclose()
        if self._run_root is not None:
            await asyncio.to_thread(self._run_root.remove)
        if self._uids is not None:
            self._uids.release()

    async def _start_worker(self) -> _Worker:
        index = next(self._index)
        spec = WorkerSpec(
            index=index,
            slots=self.config.slots_per_worker,
            policy=self.policy,
            root=self._root / f"w{index}",
            start_timeout_s=self.config.worker_start_timeout_s,
            secret=self._secret,
            uid_base=self._uids.base if self._uids is not None else SLOT_UID_BASE,
        )
        handle = self._launcher.create(spec)
        self._starting += 1
        try:
            await handle.start()
        except BaseException as exc:
            self._last_start_error = str(exc)
            with contextlib.suppress(Exception):
                await handle.kill()
            raise
        finally:
            self._starting -= 1
        worker = _Worker(handle=handle, free=set(range(spec.slots)))
        if self._closed:
            await handle.stop()
            raise PoolClosedError("the pool was closed while a worker was starting")
        self._workers[handle.worker_id] = worker
        self._last_start_error = None
        log.info("sandbox worker %s up at %s (node %s)", handle.worker_id, handle.url, handle.node_id)
        async with self._cond:
            self._cond.notify_all()
        return worker

    def _spawn(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _scale_up(self) -> None:
        try:
            await self._start_worker()
        except Exception as exc:  # waiters see it through _last_start_error
            log.error("could not start a sandbox worker: %s", exc)
            async with self._cond:
                self._cond.notify_all()

    def _want_more_workers(self) -> bool:
        total = len(self._workers) + self._starting
        pending_capacity = self._starting * self.config.slots_per_worker
        return total < self.config.max_workers and self._waiters > pending_capacity

    # -- leasing ---------------------------------------------------------------------------
    def lease_of(self, trajectory_id: str) -> Lease | None:
        return self._leases.get(trajectory_id)

    def lost_reason(self, trajectory_id: str) -> str | None:
        """Why the trajectory's previous workspace disappeared (its worker died), once; None otherwise."""
        return self._lost.pop(trajectory_id, None)

    def _pick(self, trajectory_id: str) -> tuple[_Worker, int] | None:
        preferred = self._affinity.get(trajectory_id)
        if preferred in self._workers and self._workers[preferred].free:
            w = self._workers[preferred]
            return w, min(w.free)
        candidates = [w for w in self._workers.values() if w.free]
        if not candidates:
            return None
        w = min(candidates, key=lambda w: (len(w.leased) + w.resetting, w.handle.spec.index))
        return w, min(w.free)

    async def acquire(self, trajectory_id: str, timeout: float | None = None) -> Lease:
        """The trajectory's slot: its existing lease, or a free one (waiting and scaling up as needed)."""
        if self._closed:
            raise PoolClosedError("the sandbox pool is closed; create a new one")
        if not self._started:
            await self.start()
        lease = self._leases.get(trajectory_id)
        if lease is not None:
            return lease
        limit = self.config.acquire_timeout_s if timeout is None else timeout
        deadline = time.monotonic() + limit
        async with self._cond:
            self._waiters += 1
            try:
                while True:
                    lease = self._leases.get(trajectory_id)  # a concurrent acquire of the same id
                    if lease is not None:
                        return lease
                    picked = self._pick(trajectory_id)
                    if picked is not None:
                        worker, slot = picked
                        worker.free.discard(slot)
                        worker.leased[slot] = trajectory_id
                        h = worker.handle
                        lease = Lease(trajectory_id, h.worker_id, h.url, slot, h.node_id)
                        self._leases[trajectory_id] = lease
                        self._affinity[trajectory_id] = h.worker_id
                        return lease
                    if self._closed:
                        raise PoolClosedError("the sandbox pool was closed while waiting for a slot")
                    if self._want_more_workers():
                        self._spawn(self._scale_up())
                    elif not self._workers and not self._starting and self._last_start_error:
                        raise WorkerStartError(f"no sandbox worker is running: {self._last_start_error}")
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise SlotAcquireTimeout(self._timeout_message(trajectory_id, limit))
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._cond.wait(), remaining)
            finally:
                self._waiters -= 1

    def _timeout_message(self, trajectory_id: str, limit: float) -> str:
        busy = sum(len(w.leased) for w in self._workers.values())
        msg = (
            f"no sandbox slot for trajectory {trajectory_id!r} within {limit:g}s: {len(self._workers)} workers x "
            f"{self.config.slots_per_worker} slots, {busy} leased (max_workers={self.config.max_workers}); "
            "raise max_workers or slots_per_worker, or release finished trajectories"
        )
        if self._last_start_error:
            msg += f"; the last worker start failed: {self._last_start_error}"
        return msg

    async def release(self, trajectory_id: str, reset_workspace: bool = True) -> None:
        """Give the trajectory's slot back (emptying its workspace and stopping its shells first)."""
        self._lost.pop(trajectory_id, None)
        lease = self._leases.pop(trajectory_id, None)
        if lease is None:
            return
        worker = self._workers.get(lease.worker_id)
        if worker is None:
            return
        worker.leased.pop(lease.slot, None)
        if reset_workspace:
            worker.resetting += 1
            try:
                ok = await self._post(worker, "/reset", {"slot": lease.slot})
            finally:
                worker.resetting -= 1
            if not ok:
                # A worker that cannot reset a slot is suspect: replace it if it is dead.
                await self._check_worker(worker, "it failed to reset a slot")
        if lease.worker_id in self._workers:
            worker.free.add(lease.slot)
            if not worker.leased:
                worker.idle_since = time.monotonic()
        async with self._cond:
            self._cond.notify_all()

    async def _post(self, worker: _Worker, path: str, body: dict[str, Any]) -> bool:
        assert self._session is not None
        try:
            async with self._session.post(worker.handle.url + path, json=body) as resp:
                return resp.status == 200
        except (aiohttp.ClientError, TimeoutError):
            return False

    # -- health and scaling ----------------------------------------------------------------
    async def report_failure(self, worker_id: str, reason: str) -> None:
        """Called by the executor when a request to a worker failed; replaces the worker if it is dead."""
        worker = self._workers.get(worker_id)
        if worker is not None:
            await self._check_worker(worker, reason)

    async def _probe(self, worker: _Worker) -> Literal["ok", "slow", "dead"]:
        """``dead`` when the process or its server is gone (refused connection), ``slow`` when it did not answer
        in time: under heavy load a live worker can miss one check, so only repeated misses replace it."""
        if not worker.handle.process_alive():
            return "dead"
        assert self._session is not None
        try:
            timeout = aiohttp.ClientTimeout(total=max(2.0, self.config.health_interval_s * 2))
            async with self._session.get(worker.handle.url + "/health", timeout=timeout) as resp:
                return "ok" if resp.status == 200 else "dead"
        except TimeoutError:
            return "slow"
        except aiohttp.ClientError:
            return "dead"

    async def _check_worker(self, worker: _Worker, reason: str = "it failed a health check") -> None:
        state = await self._probe(worker)
        if state == "ok":
            worker.failures = 0
            return
        worker.failures += 1
        if state == "slow" and worker.failures < self.config.health_failures_to_replace:
            log.info(
                "sandbox worker %s is slow to answer (%s; %d in a row)",
                worker.handle.worker_id,
                reason,
                worker.failures,
            )
            return
        await self._replace(worker, reason)

    async def _replace(self, worker: _Worker, reason: str) -> None:
        wid = worker.handle.worker_id
        if self._workers.pop(wid, None) is None:
            return  # already replaced
        log.warning("sandbox worker %s is dead (%s); replacing it", wid, reason)
        for traj in worker.leased.values():
            self._leases.pop(traj, None)
            self._affinity.pop(traj, None)
            self._lost[traj] = f"sandbox worker {wid} died ({reason}); the trajectory's workspace was lost"
        with contextlib.suppress(Exception):
            await worker.handle.kill()
        if not self._closed and (len(self._workers) + self._starting < self.config.min_workers or worker.leased):
            self._spawn(self._scale_up())
        async with self._cond:
            self._cond.notify_all()

    async def _health_loop(self) -> None:
        while not self._closed:
            await asyncio.sleep(self.config.health_interval_s)
            workers = list(self._workers.values())
            await asyncio.gather(*(self._check_worker(w) for w in workers), return_exceptions=True)
            await self._scale_down()
            if not self._closed and len(self._workers) + self._starting < self.config.min_workers:
                self._spawn(self._scale_up())

    async def _scale_down(self) -> None:
        now = time.monotonic()
        for worker in sorted(self._workers.values(), key=lambda w: -w.handle.spec.index):
            if len(self._workers) <= self.config.min_workers or self._waiters:
                return
            if worker.leased or worker.resetting or now - worker.idle_since < self.config.scale_down_cooldown_s:
                continue
            self._workers.pop(worker.handle.worker_id, None)
            log.info("stopping idle sandbox worker %s", worker.handle.worker_id)
            await worker.handle.stop()

    # -- introspection ---------------------------------------------------------------------
    @property
    def workers(self) -> list[WorkerHandle]:
        return [w.handle for w in self._workers.values()]

    def worker(self, worker_id: str) -> WorkerHandle | None:
        w = self._workers.get(worker_id)
        return w.handle if w is not None else None

    def stats(self) -> dict[str, Any]:
        return {
            "workers": len(self._workers),
            "starting": self._starting,
            "slots": sum(w.handle.spec.slots for w in self._workers.values()),
            "leased": len(self._leases),
            "waiters": self._waiters,
            "nodes": sorted({str(w.handle.node_id) for w in self._workers.values()}),
        }
