"""ToolContext: a reward function's access to the rollout's workspace (local and bwrap)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from hermes_env.backends import ExecutionBackend
from hermes_env.tool_context import ToolContext
from hermes_env.tools import ToolArgumentError, ToolCallError


async def test_binary_round_trip_and_text(backend: ExecutionBackend) -> None:
    async with ToolContext("r1", backend) as ctx:
        blob = os.urandom(4096) + b"\x00\xff"
        await ctx.write_file("data/blob.bin", blob)
        assert await ctx.read_file_bytes("data/blob.bin") == blob
        await ctx.write_file("greeting.txt", "héllo wörld\n")
        assert await ctx.read_file("greeting.txt") == "héllo wörld\n"
        res = await ctx.terminal("wc -c < data/blob.bin", timeout=10)
        assert res.ok and int(res.output) == len(blob)
        assert await ctx.exists("data") and await ctx.exists("greeting.txt") and not await ctx.exists("nope")


async def test_upload_and_download_dirs(backend: ExecutionBackend, tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "pkg" / "sub").mkdir(parents=True)
    (src / "pkg" / "__init__.py").write_text("")
    (src / "pkg" / "sub" / "mod.py").write_text("VALUE = 42\n")
    (src / "image.png").write_bytes(bytes(range(256)))
    async with ToolContext("r2", backend) as ctx:
        written = await ctx.upload_dir(src, "project")
        assert sorted(written) == ["project/image.png", "project/pkg/__init__.py", "project/pkg/sub/mod.py"]
        res = await ctx.terminal("cd project && python3 -c 'from pkg.sub.mod import VALUE; print(VALUE)'", 20)
        assert res.output.strip() == "42", res
        await ctx.terminal("echo generated > project/pkg/out.txt", 10)
        out = tmp_path / "out"
        paths = await ctx.download_dir("project", out)
        assert sorted(p.relative_to(out).as_posix() for p in paths) == [
            "image.png",
            "pkg/__init__.py",
            "pkg/out.txt",
            "pkg/sub/mod.py",
        ]
        assert (out / "image.png").read_bytes() == bytes(range(256))
        assert (out / "pkg" / "out.txt").read_text() == "generated\n"
        await ctx.upload_file(src / "image.png", "single/copy.png")
        await ctx.download_file("single/copy.png", tmp_path / "dl" / "copy.png")
        assert (tmp_path / "dl" / "copy.png").read_bytes() == bytes(range(256))


async def test_search_and_call_tool(backend: ExecutionBackend) -> None:
    async with ToolContext("r3", backend) as ctx:
        await ctx.write_file("a.py", "def f():\n    return 41\n")
        matches = await ctx.search(r"return \d+")
        assert [(m.path, m.line, m.text) for m in matches] == [("a.py", 2, "    return 41")]
        out = await ctx.call_tool("patch", {"path": "a.py", "old": "return 41", "new": "return 42"})
        assert out.startswith("Patched a.py")
        assert "return 42" in await ctx.read_file("a.py")
        with pytest.raises(ToolArgumentError):
            await ctx.call_tool("read_file", {})
        with pytest.raises(ToolCallError, match="unknown tool"):
            await ctx.call_tool("nope", {})
        with pytest.raises(ToolArgumentError):
            await ctx.search("(")


async def test_cleanup_destroys_workspace_and_closes(backend: ExecutionBackend) -> None:
    ctx = ToolContext("r4", backend)
    await ctx.write_file("x.txt", "x")
    workspace_path = getattr(backend, "workspace_path", None)  # docker: the workspace is inside the container
    ws = workspace_path("r4") if workspace_path is not None else None
    assert ws is None or ws.exists()
    await ctx.cleanup()
    await ctx.cleanup()  # idempotent
    assert ws is None or not ws.exists()
    assert await backend.list_files("r4") == []
    with pytest.raises(RuntimeError, match="was cleaned up"):
        await ctx.read_file("x.txt")


async def test_escapes_refused_through_context(backend: ExecutionBackend) -> None:
    async with ToolContext("r5", backend) as ctx:
        with pytest.raises(PermissionError):
            await ctx.read_file("../../etc/passwd")
        with pytest.raises(PermissionError):
            await ctx.write_file("../evil.txt", "x")


async def test_does_not_block_the_event_loop(backend: ExecutionBackend) -> None:
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

    async with ToolContext("r6", backend) as ctx:
        t = asyncio.create_task(ticker())
        res = await ctx.terminal("while [ ! -e go ]; do sleep 0.01; done; echo done", 10)
        stop.set()
        await t
    assert not res.timed_out
    assert res.output == "done\n"
    assert ticks > 5
