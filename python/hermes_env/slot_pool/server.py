"""The sandbox server: one HTTP process per worker, on 127.0.0.1, serving that worker's slots.

Run by the pool as ``python -m hermes_env.slot_pool.server --slots N --root DIR --policy JSON``.
It binds a free port, prints one JSON line ``{"port": ..., "pid": ...}`` on stdout once it
listens (nothing else ever goes to stdout, which its launcher stops reading), and exits when its
parent process goes away (so a killed pool leaves no orphans). As root it first moves into a
mount namespace of its own, where each slot's workspace is a size-limited tmpfs (the disk quota)
that disappears with the worker however it ends.

Routes: ``POST /execute`` (one SlotCall), ``POST /batch`` (calls of many slots; each slot's
calls run in order, different slots concurrently), ``GET /health``, ``POST /reset``,
``GET /slots``, ``POST /artifacts/{read,list,archive}``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hmac
import json
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from aiohttp import web
from pydantic import BaseModel, ValidationError

from hermes_env.isolation import reaper
from hermes_env.isolation.quota import private_mount_namespace
from hermes_env.isolation.result import ExecResult
from hermes_env.isolation.users import SLOT_UID_BASE
from hermes_env.slot_pool.config import SandboxPolicy
from hermes_env.slot_pool.launchers.base import SECRET_ENV, SECRET_HEADER
from hermes_env.slot_pool.protocol import (
    NDJSON,
    ArtifactRequest,
    BatchRequest,
    BatchResponse,
    SlotCall,
    SlotRequest,
)
from hermes_env.slot_pool.slots import SlotHost

log = logging.getLogger("hermes_env.slot_pool.server")
MAX_REQUEST_BYTES = 512 * 1024 * 1024


def _json(model: BaseModel | dict[str, Any], status: int = 200) -> web.Response:
    body = model.model_dump_json() if isinstance(model, BaseModel) else json.dumps(model)
    return web.Response(body=body, status=status, content_type="application/json")


async def _parse(request: web.Request, model: type[BaseModel]) -> BaseModel | web.Response:
    try:
        raw = await request.read()
        return model.model_validate_json(raw)
    except ValidationError as exc:
        msg = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in exc.errors()[:5])
        return _json({"error": f"invalid {model.__name__}: {msg}"}, status=422)


async def _run_batch(host: SlotHost, calls: list[SlotCall]) -> list[ExecResult]:
    # Per slot, calls run in request order (the slot lock is FIFO); slots run concurrently.
    return list(await asyncio.gather(*(host.execute(c) for c in calls)))


async def _stream_batch(host: SlotHost, calls: list[SlotCall], request: web.Request) -> web.StreamResponse:
    """One NDJSON line ``{"index": i, "result": ...}`` per call, as each finishes: a fast call is not
    held back by a slow one sharing its batch."""

    async def one(i: int, call: SlotCall) -> tuple[int, ExecResult]:
        return i, await host.execute(call)

    # Tasks are created in request order, so each slot's FIFO lock sees its calls in that order.
    tasks = [asyncio.create_task(one(i, c)) for i, c in enumerate(calls)]
    resp = web.StreamResponse(headers={"Content-Type": NDJSON})
    try:
        await resp.prepare(request)
        for next_done in asyncio.as_completed(tasks):
            i, result = await next_done
            await resp.write(json.dumps({"index": i, "result": result.model_dump()}).encode() + b"\n")
        await resp.write_eof()
    finally:
        for t in tasks:
            t.cancel()  # the client went away: stop what is still running
    return resp


def _secret_guard(secret: str) -> Callable[..., Awaitable[web.StreamResponse]]:
    expected = secret.encode()

    @web.middleware
    async def guard(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]):  # noqa: ANN202
        if request.path != "/health":
            presented = request.headers.get(SECRET_HEADER, "").encode()
            if not hmac.compare_digest(presented, expected):
                return _json(
                    {"error": f"missing or wrong {SECRET_HEADER}; only the pool that started me may call"}, 401
                )
        return await handler(request)

    return guard


def build_app(host: SlotHost, worker_id: str, secret: str | None = None) -> web.Application:
    middlewares = [_secret_guard(secret)] if secret else []
    app = web.Application(client_max_size=MAX_REQUEST_BYTES, middlewares=middlewares)
    Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

    def route(model: type[BaseModel], fn: Callable[[Any], Awaitable[BaseModel]]) -> Handler:
        async def handler(request: web.Request) -> web.StreamResponse:
            parsed = await _parse(request, model)
            if isinstance(parsed, web.Response):
                return parsed
            return _json(await fn(parsed))

        return handler

    async def health(_: web.Request) -> web.Response:
        return _json(
            {
                "ok": True,
                "worker_id": worker_id,
                "pid": os.getpid(),
                "slots": len(host.slots),
                "sandboxed": host.sandboxed,
                "isolation": host.isolation,
                "sandbox_problem": host.sandbox_problem,
                "allow_network": host.policy.allow_network,
            }
        )

    async def slots(_: web.Request) -> web.Response:
        return _json({"worker_id": worker_id, "slots": host.describe()})

    async def batch(req: BatchRequest) -> BatchResponse:
        return BatchResponse(results=await _run_batch(host, req.calls))

    def artifact(kind: str) -> Callable[[ArtifactRequest], Awaitable[ExecResult]]:
        async def fn(req: ArtifactRequest) -> ExecResult:
            return await host.artifact(req.slot, kind, req.path, req.max_bytes)

        return fn

    async def reset(req: SlotRequest) -> ExecResult:
        return await host.reset(req.slot)

    app.router.add_get("/health", health)
    app.router.add_get("/slots", slots)
    app.router.add_post("/execute", route(SlotCall, host.execute))
    batch_json = route(BatchRequest, batch)

    async def batch_handler(request: web.Request) -> web.StreamResponse:
        if NDJSON not in request.headers.get("Accept", ""):
            return await batch_json(request)
        parsed = await _parse(request, BatchRequest)
        if isinstance(parsed, web.Response):
            return parsed
        assert isinstance(parsed, BatchRequest)
        return await _stream_batch(host, parsed.calls, request)

    app.router.add_post("/batch", batch_handler)
    app.router.add_post("/reset", route(SlotRequest, reset))
    for kind in ("read", "list", "archive"):
        app.router.add_post(f"/artifacts/{kind}", route(ArtifactRequest, artifact(kind)))
    return app


def _ready_line(info: dict[str, Any]) -> None:
    """Print the one stdout line the launcher reads, then send stdout to stderr (the log): a stray print
    later must not fill a pipe nobody reads."""
    print(json.dumps(info), flush=True)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())


async def serve(args: argparse.Namespace) -> int:
    policy = SandboxPolicy.model_validate_json(args.policy)
    reaper.start()  # orphaned sandboxes come to this worker and are reaped here
    host = SlotHost(
        Path(args.root),
        args.slots,
        policy,
        worker_index=args.worker_index,
        uid_base=args.uid_base,
        isolation=args.isolation,
    )
    try:
        await asyncio.to_thread(host.prepare)
    except (RuntimeError, OSError) as exc:
        _ready_line({"error": str(exc)})
        return 2
    app = build_app(host, args.worker_id, os.environ.pop(SECRET_ENV, None))
    # A short shutdown: calls still running when the worker stops are cancelled (and their sandboxes killed).
    runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=2.0)
    await runner.setup()
    if args.unix_socket:
        site: web.BaseSite = web.UnixSite(runner, args.unix_socket, backlog=1024)
        await site.start()
        os.chmod(args.unix_socket, 0o600)
        port = 0
    else:
        site = web.TCPSite(runner, args.host, args.port, backlog=1024)
        await site.start()
        server = site._server  # noqa: SLF001 - aiohttp exposes the bound port only here
        port = server.sockets[0].getsockname()[1] if server is not None and server.sockets else args.port
    _ready_line({"port": port, "pid": os.getpid(), "sandboxed": host.sandboxed, "isolation": host.isolation})

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)

    async def watch_parent() -> None:
        while not stop.is_set():
            if args.parent_pid and os.getppid() != args.parent_pid:
                log.warning("parent %d is gone; shutting down", args.parent_pid)
                stop.set()
            await asyncio.sleep(0.5)

    watcher = asyncio.create_task(watch_parent())
    await stop.wait()
    watcher.cancel()
    with contextlib.suppress(Exception):
        await host.close()
    await runner.cleanup()
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="hermes_env sandbox server (one per worker; started by SlotPool)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0 picks a free port")
    p.add_argument("--slots", type=int, required=True)
    p.add_argument("--root", required=True, help="directory holding this worker's slot workspaces")
    p.add_argument("--policy", default="{}", help="SandboxPolicy as JSON (set by the environment)")
    p.add_argument("--worker-index", type=int, default=0, help="distinct per worker; picks the slots' uids")
    p.add_argument("--uid-base", type=int, default=SLOT_UID_BASE, help="first slot uid of the pool's uid block")
    p.add_argument("--worker-id", default="worker")
    p.add_argument("--parent-pid", type=int, default=0, help="exit when this process is no longer our parent")
    p.add_argument("--unix-socket", default=None, help="listen on this Unix socket instead of --host/--port")
    p.add_argument(
        "--isolation",
        choices=("bubblewrap", "container"),
        default="bubblewrap",
        help="container: the worker's container isolates it; no bubblewrap per command",
    )
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(asctime)s %(name)s %(message)s")
    policy = SandboxPolicy.model_validate_json(args.policy)
    if os.geteuid() == 0 and policy.limits.disk_bytes is not None and args.isolation != "container":
        private_mount_namespace()  # before any thread starts: unshare(CLONE_NEWNS) is per process
    return asyncio.run(serve(args))


if __name__ == "__main__":
    sys.exit(main())
