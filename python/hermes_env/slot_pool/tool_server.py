"""The tool server: tools that must run outside the sandbox (web access, APIs holding keys ...).

FastAPI app with ``GET /health`` (no auth, reveals nothing), ``GET /tools`` and
``POST /execute`` (bearer token, compared in constant time). A semaphore bounds the calls
running at once; a request that cannot get a turn within ``queue_timeout_s`` is answered
429. Bodies over ``max_request_bytes`` are answered 413 before they are parsed. The token is
only read from the environment (never a command-line argument, which ``ps`` shows), held as
a ``SecretStr``, and a logging filter masks it should any message ever contain it.

Run: ``HERMES_TOOL_SERVER_TOKEN=... python -m hermes_env.slot_pool.tool_server --tools pkg.mod:TOOLS``.
Its stdout carries one line, ``{"port": ..., "pid": ...}``, printed once the socket listens and the
app has started (a client may connect as soon as it reads it); after that stdout goes to stderr, so a
launcher may stop reading it. Logs go to stderr; the per-request access log is off unless
``--access-log`` is given (a busy server writes one line per request: read stderr or send it to a file).
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import hmac
import importlib
import inspect
import json
import logging
import os
import socket
import sys
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from hermes_env._lazy import import_reference
from hermes_env.isolation.result import ExecResult
from hermes_env.timeouts import clamp_timeout

log = logging.getLogger("hermes_env.slot_pool.tool_server")
TOKEN_ENV = "HERMES_TOOL_SERVER_TOKEN"

ToolFn = Callable[[dict[str, Any]], Awaitable[Any] | Any]


@dataclass(frozen=True)
class ExternalTool:
    """A tool served by the tool server. ``fn(args)`` may be sync or async and return text,
    a JSON-able value, or an ExecResult; an exception becomes an error result."""

    name: str
    fn: ToolFn
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})

    def schema(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


class ToolServerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    token: SecretStr
    max_concurrency: int = Field(16, ge=1)
    queue_timeout_s: float = Field(5.0, ge=0.0, description="wait for a free turn before answering 429")
    max_request_bytes: int = Field(1024 * 1024, ge=256)
    default_timeout_s: float = Field(60.0, gt=0.0)
    max_timeout_s: float = Field(600.0, gt=0.0)

    @classmethod
    def from_env(cls, **overrides: Any) -> ToolServerConfig:
        token = os.environ.get(TOKEN_ENV)
        if not token:
            raise ValueError(f"set {TOKEN_ENV} to the bearer token clients must send (it is never read from argv)")
        return cls(token=SecretStr(token), **overrides)


class ExecuteRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    trajectory_id: str | None = None
    timeout: float | None = Field(None, gt=0.0)


class RedactFilter(logging.Filter):
    """Masks the token in any log record (defence in depth: nothing logs it on purpose).

    The record keeps its shape: ``msg`` and each argument are masked in place, so formatters that read
    the arguments themselves (uvicorn's access formatter unpacks five of them) still work.
    """

    def __init__(self, secret: str) -> None:
        super().__init__()
        self._secret = secret

    def _mask(self, value: object) -> object:
        if isinstance(value, str):
            return value.replace(self._secret, "***") if self._secret in value else value
        if isinstance(value, int | float | bool | type(None)):
            return value
        text = str(value)
        return text.replace(self._secret, "***") if self._secret in text else value

    def filter(self, record: logging.LogRecord) -> bool:
        if not self._secret:
            return True
        record.msg = self._mask(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(self._mask(a) for a in record.args)
        elif isinstance(record.args, Mapping):
            record.args = {k: self._mask(v) for k, v in record.args.items()}
        return True


class _BodyLimit:
    """ASGI middleware answering 413 for bodies over the limit, declared or streamed."""

    def __init__(self, app: Any, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await self._reject(send, int(declared))
            return
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body = message.get("body", b"")
            size += len(body)
            if size > self.limit:
                await self._reject(send, size)
                return
            chunks.append(body)
            more = message.get("more_body", False)
        replay = [{"type": "http.request", "body": b"".join(chunks), "more_body": False}]

        async def replay_receive() -> dict[str, Any]:
            return replay.pop() if replay else await receive()

        await self.app(scope, replay_receive, send)

    async def _reject(self, send: Any, size: int) -> None:
        body = json.dumps(
            {"error": f"request body of {size} bytes is over the {self.limit}-byte limit; send less per call"}
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": body})


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


class _AuthError(Exception):
    pass


def create_app(tools: Iterable[ExternalTool], config: ToolServerConfig) -> Any:
    """The ASGI app (FastAPI wrapped in the body-size limit)."""
    registry = {t.name: t for t in tools}
    secret = config.token.get_secret_value().encode()
    if len(secret) < 16:
        raise ValueError("the tool server token must be at least 16 characters; generate one with secrets.token_hex")
    gate = asyncio.Semaphore(config.max_concurrency)
    app = FastAPI(title="hermes_env tool server", docs_url=None, redoc_url=None, openapi_url=None)
    redact = RedactFilter(config.token.get_secret_value())
    for name in ("", "uvicorn", "uvicorn.access", "uvicorn.error", "fastapi", log.name):
        logging.getLogger(name).addFilter(redact)

    async def authorize(request: Request) -> None:
        header = request.headers.get("authorization", "")
        scheme, _, presented = header.partition(" ")
        # compare_digest on bytes: the time taken does not depend on how much of the token matched.
        if scheme.lower() != "bearer" or not hmac.compare_digest(presented.strip().encode(), secret):
            raise _AuthError

    @app.exception_handler(_AuthError)
    async def _unauthorized(_: Request, __: _AuthError) -> JSONResponse:
        return _error(401, "missing or wrong bearer token", {"WWW-Authenticate": "Bearer"})

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"ok": True, "tools": len(registry)}

    @app.get("/tools", dependencies=[Depends(authorize)])
    async def list_tools() -> dict[str, Any]:
        return {"tools": [t.schema() for t in registry.values()]}

    @app.post("/execute", dependencies=[Depends(authorize)])
    async def execute(req: ExecuteRequest) -> JSONResponse:
        tool = registry.get(req.tool)
        if tool is None:
            return _error(404, f"unknown tool {req.tool!r}; GET /tools lists the {len(registry)} available")
        try:
            await asyncio.wait_for(gate.acquire(), config.queue_timeout_s)
        except TimeoutError:
            return _error(
                429, f"tool server busy ({config.max_concurrency} calls running); retry later", {"Retry-After": "1"}
            )
        try:
            timeout = clamp_timeout(req.timeout, default=config.default_timeout_s, maximum=config.max_timeout_s)
            result = await _run_tool(tool, req.args, timeout)
        finally:
            gate.release()
        return JSONResponse(result.model_dump())

    return _BodyLimit(app, config.max_request_bytes)


async def _run_tool(tool: ExternalTool, args: dict[str, Any], timeout: float) -> ExecResult:
    async def call() -> Any:
        if inspect.iscoroutinefunction(tool.fn):
            return await tool.fn(args)
        return await asyncio.to_thread(tool.fn, args)

    try:
        value = await asyncio.wait_for(call(), timeout)
    except TimeoutError:
        return ExecResult(output=f"tool {tool.name} timed out after {timeout:g}s", exit_code=124, timed_out=True)
    except Exception as exc:  # a tool bug fails the call, not the server
        log.warning("tool %s raised %s", tool.name, type(exc).__name__)
        return ExecResult.failure("tool_server", f"tool {tool.name} failed: {type(exc).__name__}: {exc}")
    if isinstance(value, ExecResult):
        return value
    if isinstance(value, str):
        return ExecResult(output=value)
    return ExecResult(output=json.dumps(value, default=str), data={"value": value})


def load_tools(spec: str) -> list[ExternalTool]:
    """``module:attribute`` naming a list of ExternalTool (or a function returning one).

    Every way this can go wrong (no such module, no such attribute, the module itself failing to
    import, not a list of ExternalTool) is a ValueError saying which.
    """
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ValueError(f"--tools expects module:attribute (e.g. mypkg.tools:TOOLS), got {spec!r}")
    obj = import_reference(spec, f"--tools {spec}")
    tools = obj() if callable(obj) else obj
    # Under ``python -m`` this module is __main__; user code imports the real module's class.
    canonical = importlib.import_module("hermes_env.slot_pool.tool_server").ExternalTool
    if isinstance(tools, str | bytes) or not isinstance(tools, Iterable):
        raise ValueError(f"--tools {spec} is a {type(tools).__name__}; it must be a list of ExternalTool")
    tools = list(tools)
    if not tools or not all(isinstance(t, ExternalTool | canonical) for t in tools):
        raise ValueError(f"--tools {spec} must be a non-empty list of ExternalTool (hermes_env.slot_pool.tool_server)")
    return tools


def log_config(secret: str) -> dict[str, Any]:
    """uvicorn's logging set-up with every handler on stderr and masking the token."""
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config["filters"] = {"redact": {"()": RedactFilter, "secret": secret}}
    for handler in config["handlers"].values():
        handler["stream"] = "ext://sys.stderr"
        handler["filters"] = ["redact"]
    return config


async def serve(app: Any, sock: socket.socket, *, access_log: bool, secret: str) -> None:
    """Serve on the listening ``sock``; print the ready line once the app has started."""
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, log_config=log_config(secret), access_log=access_log))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if serving.done():
            await serving  # startup failed: its exception, or a clean exit
            return
        await asyncio.sleep(0.01)
    print(json.dumps({"port": sock.getsockname()[1], "pid": os.getpid()}), flush=True)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # nothing else may fill a stdout nobody reads
    await serving


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=f"hermes_env tool server (token from ${TOKEN_ENV})")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0 picks a free port (printed as JSON on stdout)")
    p.add_argument("--tools", required=True, help="module:attribute holding a list of ExternalTool")
    p.add_argument("--max-concurrency", type=int, default=16)
    p.add_argument("--max-request-bytes", type=int, default=1024 * 1024)
    p.add_argument("--access-log", action="store_true", help="log every request (to stderr)")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    try:
        config = ToolServerConfig.from_env(
            max_concurrency=args.max_concurrency, max_request_bytes=args.max_request_bytes
        )
        app = create_app(load_tools(args.tools), config)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    sock.listen(2048)  # connections queue from now on, before the ready line is printed
    asyncio.run(serve(app, sock, access_log=args.access_log, secret=config.token.get_secret_value()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
