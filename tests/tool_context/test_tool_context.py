"""ToolContext: hermes-agent's reward API (sync or awaited calls, dict results) on local and bwrap."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hermes_env.agent_env import ToolCall
from hermes_env.backends import ExecutionBackend, get_backend
from hermes_env.sync_bridge import HELPER, is_awaited_call
from hermes_env.tool_context import ToolContext

from tests.conftest import needs_bwrap


async def test_results_read_as_dicts_and_objects(backend: ExecutionBackend) -> None:
    async with ToolContext("r1", backend) as ctx:
        res = await ctx.terminal("echo hi; exit 3")
        assert res == {"output": "hi", "exit_code": 3, "error": None}
        assert (res["exit_code"], res.exit_code, res.output, res.ok, res.timed_out) == (3, 3, "hi", False, False)
        assert json.loads(json.dumps(res)) == res
        written = await ctx.write_file("a/b.txt", "x\ny\n")
        assert written == {"bytes_written": 4, "dirs_created": True} and written.bytes_written == 4
        read = await ctx.read_file("a/b.txt")
        assert read["content"] == read.content == "     1|x\n     2|y" and read.total_lines == 2
        assert (await ctx.read_file("missing.txt"))["error"] == "File not found: missing.txt"
        with pytest.raises(AttributeError, match="result has no field 'nope'"):
            _ = read.nope


def upstream_reward(ctx: Any) -> float:
    """Reward code as hermes-agent users write it: synchronous calls, dict results."""
    ctx.terminal("mkdir -p out && echo 42 > out/answer.txt")
    test = ctx.terminal("cat out/answer.txt")
    if test["exit_code"] != 0:
        return 0.0
    content = ctx.read_file("out/answer.txt")
    found = ctx.search("42", path="out")
    return 1.0 if content.get("content") == "     1|42" and found["total_count"] == 1 else 0.5


async def test_hermes_agent_reward_code_runs_unchanged_inside_the_loop(backend: ExecutionBackend) -> None:
    async with ToolContext("r2", backend) as ctx:
        before = HELPER.calls

        async def compute_reward() -> float:  # upstream's compute_reward is async def with sync ctx calls
            return upstream_reward(ctx)

        assert await asyncio.wait_for(compute_reward(), 30) == 1.0
        assert HELPER.calls - before == 4  # each synchronous call went through the helper loop
        before = HELPER.calls
        res = await ctx.terminal("true")
        assert res.ok and HELPER.calls == before  # an awaited call runs on the caller's loop


async def test_sync_results_are_awaitable_for_gather_and_wait_for(backend: ExecutionBackend) -> None:
    async with ToolContext("r3", backend) as ctx:
        a, b = await asyncio.gather(ctx.terminal("echo a"), ctx.terminal("echo b"))
        assert (a.output, b.output) == ("a", "b")
        assert (await asyncio.wait_for(ctx.write_file("w.txt", "w"), 10))["bytes_written"] == 1
        assert len(await asyncio.gather(ctx.upload_dir(Path(__file__).parents[1] / "data" / "hermes_agent", "d"))) == 1


@pytest.mark.parametrize(
    "name", ["local", pytest.param("bwrap", marks=needs_bwrap), pytest.param("docker", marks=pytest.mark.containers)]
)
def test_sync_use_without_any_event_loop(name: str, ws_root: Path) -> None:
    backend = get_backend(name, **({"memory_bytes": "512MiB"} if name == "docker" else {"root": ws_root}))
    ctx = ToolContext("r4", backend)
    assert upstream_reward(ctx) == 1.0
    ctx.cleanup()
    with pytest.raises(RuntimeError, match="was cleaned up"):
        ctx.terminal("true")
    asyncio.run(backend.aclose())


async def test_upload_download_shapes(backend: ExecutionBackend, tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "pkg").mkdir(parents=True)
    (src / "pkg" / "mod.py").write_text("VALUE = 7\n")
    (src / "image.png").write_bytes(os.urandom(1000) + b"\x00")
    async with ToolContext("r5", backend) as ctx:
        assert await ctx.upload_dir(src, "project") == [{"exit_code": 0, "output": ""}] * 2
        assert (await ctx.upload_file(tmp_path / "missing", "x"))["exit_code"] == -1
        assert (await ctx.upload_dir(tmp_path / "nope", "x"))[0]["output"].startswith("Local directory not found")
        res = await ctx.terminal("cd project && python3 -c 'from pkg.mod import VALUE; print(VALUE)'", 20)
        assert res.output == "7"
        out = tmp_path / "out"
        assert await ctx.download_dir("project", out) == [
            {"success": True, "bytes": 1001},
            {"success": True, "bytes": 10},
        ]
        assert (out / "image.png").read_bytes() == (src / "image.png").read_bytes()
        assert (await ctx.download_file("nope", out / "n"))["success"] is False
        assert (await ctx.download_dir("empty", out))[0]["error"] == "Remote directory is empty or missing: empty"
        assert await ctx.read_bytes("project/pkg/mod.py") == b"VALUE = 7\n"
        assert await ctx.read_text("project/pkg/mod.py") == "VALUE = 7\n"
        assert await ctx.exists("project") and not await ctx.exists("nothing")


async def test_call_tool_and_network_tools(backend: ExecutionBackend) -> None:
    async with ToolContext("r6", backend) as ctx:
        await ctx.write_file("a.py", "def f():\n    return 41\n")
        text = await ctx.call_tool("patch", {"path": "a.py", "old_string": "return 41", "new_string": "return 42"})
        assert isinstance(text, str) and json.loads(text)["success"] is True and text.error is None
        assert "missing required argument 'path'" in json.loads(await ctx.call_tool("read_file", {}))["error"]
        assert json.loads(await ctx.call_tool("nope", {})) == {"error": "Unknown tool: nope"}
        web = await ctx.web_search("hermes")
        assert web["error"].startswith("web_search is not available here: needs network access")


async def test_cleanup_kills_background_jobs_and_destroys_the_workspace(backend: ExecutionBackend) -> None:
    ctx = ToolContext("r7", backend)
    started = json.loads(await ctx.call_tool("terminal", {"command": "sleep 30", "background": True}))
    assert started["session_id"]
    workspace_path = getattr(backend, "workspace_path", None)  # docker: the workspace is inside the container
    ws = workspace_path("r7") if workspace_path is not None else None
    assert ws is None or ws.exists()
    await asyncio.wait_for(ctx.cleanup(), 10)
    await ctx.cleanup()  # idempotent
    assert ws is None or not ws.exists()
    assert await backend.list_files("r7") == []  # a later call finds a fresh, empty workspace


async def test_escapes_refused_through_context(backend: ExecutionBackend) -> None:
    async with ToolContext("r8", backend) as ctx:
        assert "escapes the workspace" in (await ctx.read_file("../../etc/passwd"))["error"]
        assert "escapes the workspace" in (await ctx.write_file("../evil.txt", "x"))["error"]
        with pytest.raises(PermissionError):
            await ctx.read_bytes("../../etc/passwd")


async def test_agent_env_exec_tool(backend: ExecutionBackend) -> None:
    async with ToolContext("r9", backend) as exec_tool:
        ok = await exec_tool(ToolCall(name="terminal", arguments={"command": "echo seed"}))
        assert ok.success and ok.output == "seed" and ok.metadata["exit_code"] == 0
        bad = await exec_tool(ToolCall(name="bash", arguments={"command": "exit 2"}))
        assert not bad.success and bad.error == "Exit code: 2"
        await exec_tool(ToolCall(name="write_file", arguments={"path": "f.txt", "content": "z"}))
        read = await exec_tool({"name": "read_file", "arguments": {"path": "f.txt"}})
        assert read.success and read.output == "     1|z" and "<tool_response>" in read.to_xml()


async def test_awaiting_is_told_apart_from_plain_calls() -> None:
    import sys

    seen: list[bool] = []

    def callee() -> Any:
        seen.append(is_awaited_call(sys._getframe(1)))
        return asyncio.sleep(0)

    await callee()
    pending = callee()
    await pending
    await asyncio.gather(callee())
    assert seen == [True, False, False]


async def test_does_not_block_the_event_loop_when_awaited(backend: ExecutionBackend) -> None:
    # The command waits for a file that only the ticker, a coroutine on the same event loop, writes
    # (after 6 ticks): it can finish only if terminal() leaves the loop free while it waits.
    ticks = 0
    stop = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            if ticks == 6:
                await ctx.write_file("go", "")
            await asyncio.sleep(0.01)

    async with ToolContext("r10", backend) as ctx:
        t = asyncio.create_task(ticker())
        res = await ctx.terminal("while [ ! -e go ]; do sleep 0.01; done; echo done", 10)
        stop.set()
        await t
    assert res.ok and res.output == "done" and ticks > 5


@needs_bwrap
async def test_synchronous_calls_reach_the_slot_pool(ws_root: Path) -> None:
    # The pool's executor batches on the caller's loop, which a synchronous call blocks: such calls go
    # straight to the slot's worker instead.
    backend = get_backend("sandbox", slots_per_worker=2, max_workers=1, root_dir=str(ws_root))
    ctx = ToolContext("pooled", backend, timeout=20)
    try:
        await ctx.write_file("seed.txt", "x")  # the rollout's own (awaited) calls lease the slot

        async def compute_reward() -> float:
            return upstream_reward(ctx)

        assert await asyncio.wait_for(compute_reward(), 60) == 1.0
        listed = await asyncio.wait_for(asyncio.to_thread(lambda: ctx.list_files("out")), 60)
        assert listed == ["out/answer.txt"] == await ctx.list_files("out")
    finally:
        await ctx.cleanup()
        await backend.aclose()
