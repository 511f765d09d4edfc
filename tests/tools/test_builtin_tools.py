"""Each built-in tool through the registry, on the local and bwrap backends."""

from __future__ import annotations

import pytest
from hermes_env.backends import ExecutionBackend
from hermes_env.tools import REGISTRY, ToolArgumentError, ToolCallError, ToolRunContext


@pytest.fixture
def ctx(backend: ExecutionBackend) -> ToolRunContext:
    return ToolRunContext("task", backend, timeout=10, max_timeout=20, max_output_chars=2000)


async def run(name: str, args: dict, ctx: ToolRunContext) -> str:
    return await REGISTRY.dispatch(name, args, ctx)


async def test_terminal_reports_output_and_exit_code(ctx: ToolRunContext) -> None:
    assert await run("terminal", {"command": "echo hello"}, ctx) == "hello\n[exit code 0]"
    out = await run("terminal", {"command": "echo oops >&2; exit 4"}, ctx)
    assert out == "oops\n[exit code 4]"
    assert await run("terminal", {"command": "true"}, ctx) == "[exit code 0]"


async def test_terminal_timeout_is_clamped_to_the_max(ctx: ToolRunContext) -> None:
    ctx.timeout, ctx.max_timeout = 1.0, 1.5
    out = await run("terminal", {"command": "sleep 60", "timeout": 3600}, ctx)
    assert "timed out after 1.5s" in out


async def test_terminal_output_is_truncated_with_head_and_tail(ctx: ToolRunContext) -> None:
    out = await run("terminal", {"command": "seq 1 5000"}, ctx)
    assert len(out) <= ctx.max_output_chars
    assert out.startswith("1\n2\n") and out.endswith("5000\n[exit code 0]")
    assert "the middle was omitted" in out


async def test_read_file_numbers_lines_and_pages(ctx: ToolRunContext) -> None:
    await ctx.backend.write_file(ctx.task_id, "notes.txt", b"alpha\nbeta\ngamma\n")
    assert await run("read_file", {"path": "notes.txt"}, ctx) == "     1\talpha\n     2\tbeta\n     3\tgamma"
    out = await run("read_file", {"path": "notes.txt", "offset": 2, "limit": 1}, ctx)
    assert out == "     2\tbeta\n[lines 2-2 of 3; use offset=3 to read more]"
    with pytest.raises(ToolCallError, match="past the end"):
        await run("read_file", {"path": "notes.txt", "offset": 9}, ctx)
    with pytest.raises(ToolCallError, match="no such file"):
        await run("read_file", {"path": "missing.txt"}, ctx)


async def test_read_file_refuses_binary_and_bounds_output(ctx: ToolRunContext) -> None:
    await ctx.backend.write_file(ctx.task_id, "blob", b"\x00\x01\x02")
    with pytest.raises(ToolCallError, match="binary file"):
        await run("read_file", {"path": "blob"}, ctx)
    await ctx.backend.write_file(ctx.task_id, "big.txt", ("x" * 100 + "\n").encode() * 400)
    out = await run("read_file", {"path": "big.txt"}, ctx)
    assert len(out) < ctx.max_output_chars + 200 and "truncated" in out


async def test_write_file_then_terminal_sees_it(ctx: ToolRunContext) -> None:
    out = await run("write_file", {"path": "pkg/mod.py", "content": "print('hi')\n"}, ctx)
    assert out == "Wrote 12 bytes (1 lines) to pkg/mod.py"
    assert await run("terminal", {"command": "python3 pkg/mod.py"}, ctx) == "hi\n[exit code 0]"


async def test_patch_exactly_one_match(ctx: ToolRunContext) -> None:
    await ctx.backend.write_file(ctx.task_id, "m.py", b"a = 1\nb = 2\na = 1\n")
    with pytest.raises(ToolCallError, match="occurs 2 times \\(lines 1, 3\\)"):
        await run("patch", {"path": "m.py", "old": "a = 1", "new": "a = 9"}, ctx)
    with pytest.raises(ToolCallError, match="not found"):
        await run("patch", {"path": "m.py", "old": "c = 3", "new": ""}, ctx)
    with pytest.raises(ToolCallError, match="different leading/trailing whitespace"):
        await run("patch", {"path": "m.py", "old": "b = 2   ", "new": "b = 3"}, ctx)
    with pytest.raises(ToolArgumentError, match="old must have at least 1"):
        await run("patch", {"path": "m.py", "old": "", "new": "x"}, ctx)
    out = await run("patch", {"path": "m.py", "old": "b = 2\na = 1", "new": "b = 3\na = 1"}, ctx)
    assert out.startswith("Patched m.py: replaced lines 2-3")
    assert await ctx.backend.read_file(ctx.task_id, "m.py") == b"a = 1\nb = 3\na = 1\n"


async def test_search_files(ctx: ToolRunContext) -> None:
    await ctx.backend.write_file(ctx.task_id, "src/a.py", b"def foo():\n    return 1\n")
    await ctx.backend.write_file(ctx.task_id, "src/b.py", b"foo = 2\n")
    await ctx.backend.write_file(ctx.task_id, "img.bin", b"\x00foo")
    await ctx.backend.write_file(ctx.task_id, ".git/objects/x", b"foo")
    out = await run("search_files", {"pattern": r"foo\b"}, ctx)
    assert out.splitlines() == [
        "src/a.py:1: def foo():",
        "src/b.py:1: foo = 2",
        "[2 matches in 3 files searched; 1 binary or oversized files skipped]",
    ]
    out = await run("search_files", {"pattern": "return", "path": "src/a.py"}, ctx)
    assert out.splitlines()[0] == "src/a.py:2:     return 1"
    assert "No matches" in await run("search_files", {"pattern": "zzz"}, ctx)
    with pytest.raises(ToolArgumentError, match="invalid regular expression"):
        await run("search_files", {"pattern": "(unclosed"}, ctx)


async def test_search_files_is_bounded(ctx: ToolRunContext) -> None:
    await ctx.backend.write_file(ctx.task_id, "many.txt", b"hit\n" * 1000)
    out = await run("search_files", {"pattern": "hit"}, ctx)
    assert "limit reached" in out and out.count("many.txt:") <= 200


async def test_todo_keeps_per_task_state(ctx: ToolRunContext) -> None:
    assert await run("todo", {}, ctx) == "Todo list is empty."
    items = [{"content": "write tests", "status": "completed"}, {"content": "fix bug", "status": "in_progress"}]
    out = await run("todo", {"items": items}, ctx)
    assert out == "Todo list (1/2 completed):\n1. [x] write tests\n2. [~] fix bug"
    assert await run("todo", {}, ctx) == out
    other = ToolRunContext("other", ctx.backend)
    assert await run("todo", {}, other) == "Todo list is empty."
    with pytest.raises(ToolCallError, match="at most one item may be in_progress"):
        await run("todo", {"items": [{"content": "a", "status": "in_progress"}] * 2}, ctx)
    with pytest.raises(ToolArgumentError, match="must be one of"):
        await run("todo", {"items": [{"content": "a", "status": "done"}]}, ctx)


@pytest.mark.parametrize("path", ["../escape.txt", "x/../../escape.txt"])
async def test_file_tools_refuse_escapes(ctx: ToolRunContext, path: str) -> None:
    for name, args in (
        ("read_file", {"path": path}),
        ("write_file", {"path": path, "content": "x"}),
        ("patch", {"path": path, "old": "a", "new": "b"}),
    ):
        with pytest.raises(ToolCallError, match="refused: .*escapes the workspace"):
            await run(name, args, ctx)
