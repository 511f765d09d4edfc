"""The tool server on a real uvicorn on 127.0.0.1: auth, size and concurrency limits, no token in logs."""

from __future__ import annotations

import asyncio
import logging
import secrets
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx
import pytest
import uvicorn
from hermes_env.sandbox import ExecutorConfig, SlotPool, ToolExecutor
from hermes_env.sandbox.tool_server import ExternalTool, ToolServerConfig, create_app
from pydantic import SecretStr

TOKEN = "tok-" + secrets.token_hex(16)
release_slow = asyncio.Event()


async def _slow(args: dict) -> str:
    await release_slow.wait()
    return "slow done"


def _add(args: dict) -> int:
    return int(args["a"]) + int(args["b"])


async def _boom(args: dict) -> str:
    raise RuntimeError("tool bug")


TOOLS = [
    ExternalTool("add", _add, "add two integers", {"type": "object", "properties": {"a": {}, "b": {}}}),
    ExternalTool("slow", _slow, "waits until the test lets it finish"),
    ExternalTool("boom", _boom, "always raises"),
]


@dataclass
class Served:
    url: str
    client: httpx.AsyncClient


@pytest.fixture
async def served() -> AsyncIterator[Served]:
    release_slow.clear()
    config = ToolServerConfig(token=SecretStr(TOKEN), max_concurrency=2, queue_timeout_s=0.3, max_request_bytes=4096)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(TOOLS, config), log_level="debug", access_log=True))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.02)
    url = f"http://127.0.0.1:{port}"
    async with httpx.AsyncClient(base_url=url, timeout=10) as client:
        try:
            yield Served(url, client)
        finally:
            release_slow.set()
            server.should_exit = True
            await task


def _auth(token: str = TOKEN) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_health_tools_and_execute(served: Served) -> None:
    assert (await served.client.get("/health")).json() == {"ok": True, "tools": 3}
    tools = (await served.client.get("/tools", headers=_auth())).json()["tools"]
    assert [t["function"]["name"] for t in tools] == ["add", "slow", "boom"]
    r = await served.client.post("/execute", headers=_auth(), json={"tool": "add", "args": {"a": 2, "b": 40}})
    assert r.status_code == 200 and r.json()["output"] == "42"
    r = await served.client.post("/execute", headers=_auth(), json={"tool": "boom"})
    assert r.json()["error_type"] == "tool_server" and "tool bug" in r.json()["error"]
    r = await served.client.post("/execute", headers=_auth(), json={"tool": "nope"})
    assert r.status_code == 404 and "GET /tools" in r.json()["error"]
    r = await served.client.post("/execute", headers=_auth(), json={"tool": "add", "extra": 1})
    assert r.status_code == 422


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({}, id="missing"),
        pytest.param(_auth("wrong-" + secrets.token_hex(16)), id="wrong"),
        pytest.param(_auth(TOKEN[:-1]), id="prefix"),
        pytest.param({"Authorization": TOKEN}, id="no-scheme"),
        pytest.param({"Authorization": f"Basic {TOKEN}"}, id="basic"),
    ],
)
async def test_missing_or_wrong_token_is_401(served: Served, headers: dict[str, str]) -> None:
    for method, path in (("GET", "/tools"), ("POST", "/execute")):
        r = await served.client.request(method, path, headers=headers, json={"tool": "add", "args": {"a": 1, "b": 1}})
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
        assert TOKEN not in r.text


async def test_oversize_requests_are_413(served: Served) -> None:
    big = {"tool": "add", "args": {"a": 1, "b": 1, "pad": "x" * 10_000}}
    r = await served.client.post("/execute", headers=_auth(), json=big)
    assert r.status_code == 413 and "4096-byte limit" in r.json()["error"]

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: counted while streaming
        yield b'{"tool": "add", "args": {"pad": "'
        for _ in range(10):
            yield b"y" * 1000
        yield b'"}}'

    r = await served.client.post("/execute", headers=_auth(), content=chunks())
    assert r.status_code == 413


async def test_concurrency_limit_answers_429(served: Served) -> None:
    running = [
        asyncio.create_task(served.client.post("/execute", headers=_auth(), json={"tool": "slow"})) for _ in range(2)
    ]
    await asyncio.sleep(0.2)
    r = await served.client.post("/execute", headers=_auth(), json={"tool": "add", "args": {"a": 1, "b": 2}})
    assert r.status_code == 429 and r.headers["retry-after"] == "1"
    release_slow.set()
    assert [t.json()["output"] for t in await asyncio.gather(*running)] == ["slow done", "slow done"]
    r = await served.client.post("/execute", headers=_auth(), json={"tool": "add", "args": {"a": 1, "b": 2}})
    assert r.status_code == 200


async def test_token_never_reaches_the_logs(served: Served, caplog: pytest.LogCaptureFixture, capfd) -> None:  # noqa: ANN001
    caplog.set_level(logging.DEBUG)
    await served.client.get("/tools", headers=_auth())
    await served.client.post("/execute", headers=_auth(), json={"tool": "boom"})
    await served.client.post("/execute", headers=_auth("bad"), json={"tool": "add"})
    await served.client.post("/execute", headers=_auth(), json={"tool": "add", "args": {"a": 1, "b": "x"}})
    logging.getLogger("uvicorn.error").info("an accidental message containing %s", TOKEN)
    out, err = capfd.readouterr()
    records = "\n".join(r.getMessage() for r in caplog.records)
    assert "POST /execute" in records or "POST /execute" in err  # the access log did run
    assert TOKEN not in records and TOKEN not in out and TOKEN not in err
    assert "accidental message containing ***" in records  # the filter masked the stray one


async def test_executor_routes_external_tools(served: Served, pool: SlotPool) -> None:
    cfg = ExecutorConfig(
        tool_server_url=served.url, tool_server_token=SecretStr(TOKEN), external_tools=frozenset({"add"})
    )
    async with ToolExecutor(pool, cfg) as ex:
        results = await ex.execute_many(
            "ext", [("add", {"a": 20, "b": 22}), ("bash", {"command": "echo local"}), ("add", {"a": 1})]
        )
        assert results[0].output == "42" and results[1].output == "local\n"
        assert results[2].error_type == "tool_server" and "KeyError" in (results[2].error or "")
        assert pool.lease_of("ext") is not None
    bad = ExecutorConfig(
        tool_server_url=served.url, tool_server_token=SecretStr("x" * 20), external_tools=frozenset({"add"})
    )
    async with ToolExecutor(pool, bad) as ex:
        r = await ex.execute("ext2", "add", {"a": 1, "b": 2})
        assert r.error_type == "tool_server" and "401" in r.output
        assert pool.lease_of("ext2") is None
