"""The tool server on a real uvicorn on 127.0.0.1: auth, size and concurrency limits, no token in logs."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from hermes_env.slot_pool import ExecutorConfig, SlotPool, ToolExecutor
from hermes_env.slot_pool.tool_server import ExternalTool, ToolServerConfig, create_app
from pydantic import SecretStr

TOKEN = "tok-" + secrets.token_hex(16)
REPO = Path(__file__).resolve().parents[2]
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


# -- the server as a process, as users start it ---------------------------------------------------
_TOOLS_MODULE = """
from hermes_env.slot_pool.tool_server import ExternalTool

def add(args):
    if args.get("shout"):
        print("a tool printing to stdout: " + "x" * 1000)
    return int(args["a"]) + int(args["b"])

TOOLS = [ExternalTool("add", add, "add two integers")]
"""


def _launch(tmp_path: Path, *extra: str, stderr: Any = subprocess.DEVNULL) -> tuple[subprocess.Popen[bytes], int]:
    (tmp_path / "proc_tools.py").write_text(_TOOLS_MODULE)
    env = {**os.environ, "HERMES_TOOL_SERVER_TOKEN": TOKEN, "PYTHONPATH": f"{tmp_path}{os.pathsep}{REPO / 'python'}"}
    cmd = [sys.executable, "-m", "hermes_env.slot_pool.tool_server", "--tools", "proc_tools:TOOLS", *extra]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=stderr, env=env)
    assert proc.stdout is not None
    line = proc.stdout.readline()  # the only read of stdout
    assert line, "the tool server exited before its ready line"
    return proc, json.loads(line)["port"]


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def test_the_ready_line_comes_once_the_socket_listens(tmp_path: Path) -> None:
    for _ in range(3):
        proc, port = _launch(tmp_path)
        try:
            # Connect the moment the line is read: no refused connection, no retry.
            with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
                conn.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                assert conn.recv(100).startswith(b"HTTP/1.1 200")
        finally:
            _stop(proc)


async def test_answers_3000_requests_while_nobody_reads_its_output(tmp_path: Path) -> None:
    # stdout and stderr are pipes nobody reads after the ready line; 64 KiB of logs would fill either.
    proc, port = _launch(tmp_path, stderr=subprocess.PIPE)
    try:
        limits = httpx.Limits(max_connections=8)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30, limits=limits) as client:

            async def worker(w: int) -> list[int]:
                codes = []
                for i in range(375):
                    r = await client.post("/execute", headers=_auth(), json={"tool": "add", "args": {"a": w, "b": i}})
                    codes.append(r.status_code)
                    assert r.json()["output"] == str(w + i)
                return codes

            codes = await asyncio.wait_for(asyncio.gather(*(worker(w) for w in range(8))), 300)
        assert sum(len(c) for c in codes) == 3000 and {c for cs in codes for c in cs} == {200}
        assert proc.poll() is None
    finally:
        _stop(proc)


async def test_access_log_goes_to_stderr_well_formed_and_masked(tmp_path: Path) -> None:
    log_path = tmp_path / "server.log"
    with log_path.open("wb") as log:
        proc, port = _launch(tmp_path, "--access-log", stderr=log)
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            for i in range(50):
                r = await client.post(
                    f"/execute?leak={TOKEN}",
                    headers=_auth(),
                    json={"tool": "add", "args": {"a": 1, "b": i, "shout": 1}},
                )
                assert r.status_code == 200
            assert (await client.get(f"/health?again={TOKEN}")).status_code == 200
    finally:
        _stop(proc)
    text = log_path.read_text()
    assert "Logging error" not in text and "Traceback" not in text
    assert TOKEN not in text
    assert text.count('"POST /execute?leak=*** HTTP/1.1" 200') == 50 and "GET /health?again=***" in text
    assert text.count("a tool printing to stdout") == 50  # stray prints land in the log, not in the unread pipe
