"""ToolExecutor: the batching front door to the slot pool.

Calls are queued; a dispatcher takes what arrives within ``batch_window_ms`` (at most
``max_batch_size``), groups it by worker and sends one ``POST /batch`` per worker. Each
worker runs a slot's calls in the order they were queued, so one trajectory's calls keep
their order. Tools named in ``external_tools`` go to the authenticated tool server instead.

Every failure comes back as a :class:`ExecResult` with ``error`` set: a dead worker fails
its in-flight calls as ``worker_lost`` (and the pool replaces it), a call past its timeout
is killed by the worker, and a worker that stops answering is given up on after the call's
timeout plus ``transport_grace_s``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from hermes_env.errors import PoolClosedError, SlotAcquireTimeout, WorkerStartError
from hermes_env.isolation.result import ExecResult
from hermes_env.slot_pool.config import ExecutorConfig
from hermes_env.slot_pool.lifecycle import AsyncService, cancel_and_wait
from hermes_env.slot_pool.pool import Lease, SlotPool
from hermes_env.slot_pool.protocol import NDJSON, SlotCall
from hermes_env.timeouts import CallBudget

log = logging.getLogger(__name__)


@dataclass
class _Pending:
    lease: Lease
    call: SlotCall
    future: asyncio.Future[ExecResult]
    queued_at: float = field(default_factory=time.monotonic)


class ToolExecutor(AsyncService):
    def __init__(self, pool: SlotPool, config: ExecutorConfig | None = None) -> None:
        self.pool = pool
        self.config = config or ExecutorConfig()
        self._queue: asyncio.Queue[_Pending] = asyncio.Queue()
        self._batch_full = asyncio.Event()
        self._session: aiohttp.ClientSession | None = None
        self._dispatcher: asyncio.Task[None] | None = None
        self._inflight: set[asyncio.Task[None]] = set()
        self._closed = False
        self.batches_sent = 0
        self.calls_sent = 0

    async def start(self) -> None:
        if self._dispatcher is not None:
            return
        await self.pool.start()
        connector = aiohttp.TCPConnector(limit=0, force_close=False)
        # No session-wide headers: the pool's secret goes to sandbox servers only, never to the tool server.
        self._session = aiohttp.ClientSession(connector=connector)
        self._dispatcher = asyncio.create_task(self._dispatch_loop())

    async def close(self) -> None:
        """Stop dispatching; queued calls fail with an error result. The pool is not closed."""
        self._closed = True
        await cancel_and_wait(self._dispatcher)
        while not self._queue.empty():
            p = self._queue.get_nowait()
            if not p.future.done():
                p.future.set_result(ExecResult.failure("internal", "the tool executor was closed before the call ran"))
        for t in list(self._inflight):
            t.cancel()
        await asyncio.gather(*self._inflight, return_exceptions=True)
        if self._session is not None:
            await self._session.close()

    # -- public API ------------------------------------------------------------------------
    async def execute(
        self, trajectory_id: str, tool: str, args: dict[str, Any] | None = None, timeout: float | None = None
    ) -> ExecResult:
        """Run one tool call for ``trajectory_id`` (acquiring its slot on first use)."""
        return (await self.execute_many(trajectory_id, [(tool, args or {})], timeout))[0]

    async def execute_many(
        self, trajectory_id: str, calls: list[tuple[str, dict[str, Any]]], timeout: float | None = None
    ) -> list[ExecResult]:
        """Several calls of one trajectory, queued together in order; results in the calls' order."""
        if self._closed:
            return [ExecResult.failure("internal", "the tool executor is closed; create a new one") for _ in calls]
        if self._dispatcher is None:
            await self.start()
        budget = self.config.budget(timeout)
        limit = budget.timeout
        waits: list[asyncio.Future[ExecResult]] = []
        lease: Lease | None = None
        lost: str | None = None
        no_slot: str | None = None
        if any(tool not in self.config.external_tools for tool, _ in calls):
            try:
                lease = await self.pool.acquire(trajectory_id)
                if self.pool.worker(lease.worker_id) is None:  # died since; the pool has dropped the lease
                    lease = await self.pool.acquire(trajectory_id)
                lost = self.pool.lost_reason(trajectory_id)
            except (SlotAcquireTimeout, WorkerStartError, PoolClosedError) as exc:
                no_slot = str(exc)
        loop = asyncio.get_running_loop()
        for tool, args in calls:
            if tool in self.config.external_tools:
                waits.append(asyncio.ensure_future(self._external(trajectory_id, tool, dict(args), limit)))
                continue
            future: asyncio.Future[ExecResult] = loop.create_future()
            if lease is None:
                future.set_result(ExecResult.failure("no_slot", no_slot or "no sandbox slot"))
            else:
                call = SlotCall(slot=lease.slot, tool=tool, args=dict(args), timeout=limit)
                self._queue.put_nowait(_Pending(lease, call, future))
                if self._queue.qsize() + 1 >= self.config.max_batch_size:
                    self._batch_full.set()  # a full batch need not wait out the window
            waits.append(future)
        # Belt and braces: even if a future were never settled, no caller waits past its deadline.
        deadline = budget.result_wait
        results = list(await asyncio.gather(*(self._bounded(w, deadline) for w in waits)))
        if lost:
            for (tool, _), r in zip(calls, results, strict=True):
                if tool in self.config.external_tools:
                    continue
                r.output = f"[{lost}; this call ran in a fresh workspace]\n" + r.output
                r.data.setdefault("workspace_replaced", True)
        return results

    @staticmethod
    async def _bounded(waiter: asyncio.Future[ExecResult], deadline: float) -> ExecResult:
        try:
            return await asyncio.wait_for(asyncio.shield(waiter), deadline)
        except TimeoutError:
            waiter.cancel()
            log.error("a tool call got no result within %.0fs; failing it", deadline)
            return ExecResult.failure("internal", f"no result within {deadline:g}s (executor bug or overload)")

    async def release_trajectory(self, trajectory_id: str, reset_workspace: bool = True) -> None:
        await self.pool.release(trajectory_id, reset_workspace=reset_workspace)

    async def read_artifact(self, trajectory_id: str, path: str) -> ExecResult:
        """A workspace file; bytes are in ``data["content_b64"]`` (``decode_content`` gets them)."""
        return await self._artifact(trajectory_id, "read", path)

    async def list_artifacts(self, trajectory_id: str, path: str = ".") -> ExecResult:
        """Regular files under ``path``, in ``data["files"]``."""
        return await self._artifact(trajectory_id, "list", path)

    async def archive_artifacts(self, trajectory_id: str, path: str = ".", max_bytes: int | None = None) -> ExecResult:
        """A tar.gz of ``path`` in ``data["archive_b64"]``."""
        return await self._artifact(trajectory_id, "archive", path, max_bytes)

    # -- internals -------------------------------------------------------------------------
    async def _artifact(self, trajectory_id: str, kind: str, path: str, max_bytes: int | None = None) -> ExecResult:
        try:
            lease = await self.pool.acquire(trajectory_id)
        except (SlotAcquireTimeout, WorkerStartError, PoolClosedError) as exc:
            return ExecResult.failure("no_slot", str(exc))
        body: dict[str, Any] = {"slot": lease.slot, "path": path}
        if max_bytes is not None:
            body["max_bytes"] = max_bytes
        return await self._post_result(lease, f"/artifacts/{kind}", body, self.config.default_timeout_s)

    async def _post_result(self, lease: Lease, route: str, body: dict[str, Any], timeout: float) -> ExecResult:
        assert self._session is not None
        try:
            async with self._session.post(
                lease.url + route,
                json=body,
                headers=self.pool.auth_headers,
                timeout=aiohttp.ClientTimeout(total=timeout + self.config.transport_grace_s),
            ) as resp:
                if resp.status != 200:
                    return ExecResult.failure("internal", f"worker answered {resp.status}: {(await resp.text())[:500]}")
                return ExecResult.model_validate_json(await resp.read())
        except (aiohttp.ClientError, TimeoutError) as exc:
            reason = f"{type(exc).__name__}: {exc}"
            await self.pool.report_failure(lease.worker_id, reason)
            return ExecResult.failure("worker_lost", f"sandbox worker {lease.worker_id} did not answer ({reason})")

    async def _dispatch_loop(self) -> None:
        window = self.config.batch_window_ms / 1000.0
        while True:
            first = await self._queue.get()
            batch = [first]
            # Never wait_for(queue.get()): on Python < 3.12 a get that completes as the timeout fires
            # is lost with its item, and that call's caller would wait forever. Wait on an event instead.
            # A lone call with nothing else in flight (one agent, sequential calls) goes at once;
            # the window only pays off while several trajectories are active.
            busy = bool(self._inflight) or not self._queue.empty()
            if window > 0 and busy and self._queue.qsize() + 1 < self.config.max_batch_size:
                self._batch_full.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._batch_full.wait(), window)
            while len(batch) < self.config.max_batch_size and not self._queue.empty():
                batch.append(self._queue.get_nowait())
            by_worker: dict[str, list[_Pending]] = {}
            for p in batch:
                by_worker.setdefault(p.lease.worker_id, []).append(p)
            for worker_id, items in by_worker.items():
                task = asyncio.create_task(self._send_guarded(worker_id, items))
                self._inflight.add(task)
                task.add_done_callback(self._inflight.discard)

    async def _send_guarded(self, worker_id: str, items: list[_Pending]) -> None:
        """``_send``, with the guarantee that every call's future is settled whatever happens."""
        try:
            await self._send(worker_id, items)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug here must fail these calls, never leave their callers waiting
            log.exception("dispatching a batch to %s failed", worker_id)
            for p in items:
                self._settle(p, ExecResult.failure("internal", f"dispatch to {worker_id} failed: {exc!r}"))
        finally:
            for p in items:
                self._settle(p, ExecResult.failure("internal", "the call was abandoned (executor closing)"))

    async def _send(self, worker_id: str, items: list[_Pending]) -> None:
        assert self._session is not None
        url = items[0].lease.url
        if self.pool.worker(worker_id) is None:
            # The worker died between acquisition and dispatch.
            for p in items:
                self._settle(
                    p, ExecResult.failure("worker_lost", f"sandbox worker {worker_id} is gone; retry the call")
                )
            return
        timeout = CallBudget(max(p.call.timeout for p in items), self.config.transport_grace_s).transport_limit
        body = {"calls": [p.call.model_dump() for p in items]}
        self.batches_sent += 1
        self.calls_sent += len(items)
        headers = {**self.pool.auth_headers, "Accept": NDJSON}
        try:
            async with self._session.post(
                url + "/batch", json=body, headers=headers, timeout=aiohttp.ClientTimeout(total=timeout)
            ) as resp:
                if resp.status != 200:
                    detail = (await resp.read())[:500].decode(errors="replace")
                    msg = f"sandbox worker {worker_id} rejected the batch ({resp.status}): {detail}"
                    for p in items:
                        self._settle(p, ExecResult.failure("internal", msg))
                    return
                # One JSON line per call as it finishes (JSON never holds a raw newline); split here
                # rather than with readline, whose line limit a large read_file result would exceed.
                buf = b""
                async for chunk in resp.content.iter_any():
                    buf += chunk
                    while b"\n" in buf:
                        line, buf = buf.split(b"\n", 1)
                        self._deliver(worker_id, items, line)
        except (aiohttp.ClientError, TimeoutError) as exc:
            reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            msg = f"sandbox worker {worker_id} was lost while running this call ({reason})"
            # Report first, so that a retry issued as soon as this call fails already gets a fresh slot.
            await self.pool.report_failure(worker_id, reason)
            for p in items:  # calls that finished before the loss keep their results
                self._settle(p, ExecResult.failure("worker_lost", msg, worker_id=worker_id))
            return
        except asyncio.CancelledError:
            for p in items:
                self._settle(p, ExecResult.failure("internal", "the tool executor was closed while the call ran"))
            raise
        for p in items:
            self._settle(p, ExecResult.failure("internal", f"worker {worker_id} ended the batch without this result"))

    @staticmethod
    def _deliver(worker_id: str, items: list[_Pending], line: bytes) -> None:
        message = json.loads(line)
        p = items[int(message["index"])]
        r = ExecResult.model_validate(message["result"])
        r.data.setdefault("worker_id", worker_id)
        if p.lease.node_id is not None:
            r.data.setdefault("node_id", p.lease.node_id)
        ToolExecutor._settle(p, r)

    @staticmethod
    def _settle(p: _Pending, result: ExecResult) -> None:
        if not p.future.done():
            p.future.set_result(result)

    async def _external(self, trajectory_id: str, tool: str, args: dict[str, Any], timeout: float) -> ExecResult:
        url = self.config.tool_server_url
        if not url:
            return ExecResult.failure(
                "tool_server", f"tool {tool!r} runs on the tool server, but no tool_server_url is set"
            )
        assert self._session is not None
        headers = {}
        if self.config.tool_server_token is not None:
            headers["Authorization"] = f"Bearer {self.config.tool_server_token.get_secret_value()}"
        body = {"tool": tool, "args": args, "trajectory_id": trajectory_id, "timeout": timeout}
        try:
            async with self._session.post(
                url.rstrip("/") + "/execute",
                json=body,
                headers=headers,
                timeout=aiohttp.ClientTimeout(total=CallBudget(timeout, self.config.transport_grace_s).transport_limit),
            ) as resp:
                raw = await resp.read()
                if resp.status != 200:
                    return ExecResult.failure(
                        "tool_server", f"tool server answered {resp.status}: {raw[:500].decode(errors='replace')}"
                    )
                return ExecResult.model_validate_json(raw)
        except (aiohttp.ClientError, TimeoutError) as exc:
            return ExecResult.failure("tool_server", f"tool server unreachable at {url}: {type(exc).__name__}: {exc}")


def decode_content(result: ExecResult) -> bytes:
    """The bytes of a read_file / artifacts-read result."""
    return base64.b64decode(result.data.get("content_b64", ""))
