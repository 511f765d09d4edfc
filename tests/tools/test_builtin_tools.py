"""Each built-in tool through the registry, on the local and bwrap backends, with hermes-agent's result shapes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hermes_env.backends import ExecutionBackend
from hermes_env.errors import ToolArgumentError
from hermes_env.tools import REGISTRY, ToolCallContext


@pytest.fixture
def ctx(backend: ExecutionBackend) -> ToolCallContext:
    return ToolCallContext("task", backend, timeout=10, max_timeout=20)


async def run(name: str, args: dict[str, Any], ctx: ToolCallContext) -> dict[str, Any]:
    return json.loads(await REGISTRY.dispatch(name, args, ctx))


async def test_terminal_answers_output_exit_code_error(ctx: ToolCallContext) -> None:
    assert await run("terminal", {"command": "echo hello"}, ctx) == {"output": "hello", "exit_code": 0, "error": None}
    assert await run("terminal", {"command": "echo oops >&2; exit 4"}, ctx) == {
        "output": "oops",
        "exit_code": 4,
        "error": None,
    }
    await REGISTRY.dispatch("write_file", {"path": "sub/f.txt", "content": "x"}, ctx)
    assert (await run("terminal", {"command": "ls", "workdir": "sub"}, ctx))["output"] == "f.txt"


async def test_terminal_timeout_answers_124_and_is_clamped(ctx: ToolCallContext) -> None:
    ctx.timeout, ctx.max_timeout = 1.0, 1.5
    out = await REGISTRY.dispatch("terminal", {"command": "sleep 60", "timeout": 3600}, ctx)
    answer = json.loads(out)
    assert answer["exit_code"] == 124 and answer["error"] == "Command timed out after 1.5 seconds"
    assert "clamped to configured limit of 1.5s" in answer["timeout_note"]
    assert out.error  # counted as a failed call


async def test_terminal_output_is_cut_like_hermes_agent(ctx: ToolCallContext) -> None:
    out = (await run("terminal", {"command": "python3 -c \"print('x' * 60000 + 'END')\""}, ctx))["output"]
    assert "[OUTPUT TRUNCATED - 10003 chars omitted out of 60003 total]" in out
    assert out.startswith("x" * 20000) and out.endswith("END")


async def test_read_file_numbers_lines_and_pages(ctx: ToolCallContext) -> None:
    await ctx.backend.write_file(ctx.task_id, "notes.txt", b"alpha\nbeta\ngamma\n")
    assert await run("read_file", {"path": "notes.txt"}, ctx) == {
        "content": "     1|alpha\n     2|beta\n     3|gamma",
        "total_lines": 3,
        "file_size": 17,
        "truncated": False,
        "is_binary": False,
        "is_image": False,
    }
    page = await run("read_file", {"path": "notes.txt", "offset": 2, "limit": 1}, ctx)
    assert page["content"] == "     2|beta" and page["truncated"] is True
    assert page["hint"] == "Use offset=3 to continue reading (showing 2-2 of 3 lines)"
    assert "past the end" in (await run("read_file", {"path": "notes.txt", "offset": 9}, ctx))["hint"]


async def test_read_file_missing_suggests_similar_names(ctx: ToolCallContext) -> None:
    await ctx.backend.write_file(ctx.task_id, "src/config.yaml", b"a: 1\n")
    answer = await run("read_file", {"path": "src/confg.yaml"}, ctx)
    assert answer["error"] == "File not found: src/confg.yaml"
    assert answer["similar_files"] == ["src/config.yaml"]


async def test_read_file_binary_and_image(ctx: ToolCallContext) -> None:
    await ctx.backend.write_file(ctx.task_id, "blob", b"\x00\x01\x02" * 10)
    assert (await run("read_file", {"path": "blob"}, ctx))["error"].startswith("Binary file - cannot display")
    await ctx.backend.write_file(ctx.task_id, "pic.png", b"\x89PNG....")
    answer = await run("read_file", {"path": "pic.png"}, ctx)
    assert answer["is_image"] is True and "vision_analyze" in answer["hint"]


async def test_write_file_then_terminal_sees_it(ctx: ToolCallContext) -> None:
    assert await run("write_file", {"path": "pkg/mod.py", "content": "print('hi')\n"}, ctx) == {
        "bytes_written": 12,
        "dirs_created": True,
    }
    assert (await run("terminal", {"command": "python3 pkg/mod.py"}, ctx))["output"] == "hi"
    assert await run("write_file", {"path": "~/top.txt", "content": "é"}, ctx) == {
        "bytes_written": 2,
        "dirs_created": False,
    }
    assert await ctx.backend.read_file(ctx.task_id, "top.txt") == "é".encode()


async def test_patch_replace_mode(ctx: ToolCallContext) -> None:
    await ctx.backend.write_file(ctx.task_id, "m.py", b"a = 1\nb = 2\na = 1\n")
    ambiguous = await run("patch", {"path": "m.py", "old_string": "a = 1", "new_string": "a = 9"}, ctx)
    assert ambiguous == {"success": False, "error": "Found 2 matches for old_string. Provide more context to make it "
                         "unique, or use replace_all=True."}  # fmt: skip
    answer = await run("patch", {"path": "m.py", "old_string": "b = 2", "new_string": "b = 3"}, ctx)
    assert answer["success"] and answer["files_modified"] == ["m.py"]
    assert answer["diff"].startswith("--- a/m.py\n+++ b/m.py\n") and "-b = 2\n+b = 3\n" in answer["diff"]
    assert answer["lint"]["status"] in ("ok", "skipped")
    everywhere = await run(
        "patch",
        {"mode": "replace", "path": "m.py", "old_string": "a = 1", "new_string": "a = 0", "replace_all": True},
        ctx,
    )
    assert everywhere["success"]
    assert await ctx.backend.read_file(ctx.task_id, "m.py") == b"a = 0\nb = 3\na = 0\n"
    assert (await run("patch", {"path": "nope.py", "old_string": "x", "new_string": "y"}, ctx))["error"] == (
        "Failed to read file: nope.py"
    )
    assert (await run("patch", {"path": "m.py", "old_string": "x"}, ctx)) == {
        "error": "old_string and new_string required"
    }


async def test_patch_fuzzy_indentation_and_lint(ctx: ToolCallContext) -> None:
    await ctx.backend.write_file(ctx.task_id, "f.py", b"def f():\n    return 1\n")
    answer = await run("patch", {"path": "f.py", "old_string": "return 1", "new_string": "return (1"}, ctx)
    assert answer["success"] and answer["lint"]["status"] == "error" and "SyntaxError" in answer["lint"]["output"]
    answer = await run(
        "patch", {"path": "f.py", "old_string": "def f():\nreturn (1", "new_string": "def f():\n    return 2"}, ctx
    )
    assert answer["success"], answer
    assert await ctx.backend.read_file(ctx.task_id, "f.py") == b"def f():\n    return 2\n"
    txt = await run("write_file", {"path": "n.txt", "content": "a\n"}, ctx)
    assert txt["bytes_written"] == 2
    answer = await run("patch", {"path": "n.txt", "old_string": "a", "new_string": "b"}, ctx)
    assert answer["lint"] == {"status": "skipped", "message": "No linter for .txt files"}


async def test_patch_v4a_mode(ctx: ToolCallContext) -> None:
    await ctx.backend.write_file(ctx.task_id, "a.py", b"x = 1\ny = 2\n")
    await ctx.backend.write_file(ctx.task_id, "old.txt", b"bye\n")
    await ctx.backend.write_file(ctx.task_id, "mv.txt", b"moved\n")
    patch = (
        "*** Begin Patch\n*** Update File: a.py\n@@ x @@\n x = 1\n-y = 2\n+y = 3\n"
        "*** Add File: new/b.txt\n+hello\n+world\n*** Delete File: old.txt\n*** Move File: mv.txt -> dir/mv.txt\n"
        "*** End Patch"
    )
    answer = await run("patch", {"mode": "patch", "patch": patch}, ctx)
    assert answer["success"], answer
    assert answer["files_modified"] == ["a.py", "mv.txt -> dir/mv.txt"]
    assert answer["files_created"] == ["new/b.txt"] and answer["files_deleted"] == ["old.txt"]
    assert await ctx.backend.read_file(ctx.task_id, "a.py") == b"x = 1\ny = 3\n"
    assert await ctx.backend.read_file(ctx.task_id, "new/b.txt") == b"hello\nworld"
    assert await ctx.backend.read_file(ctx.task_id, "dir/mv.txt") == b"moved\n"
    assert await ctx.backend.list_files(ctx.task_id) == ["a.py", "dir/mv.txt", "new/b.txt"]
    bad = await run("patch", {"mode": "patch", "patch": "*** Update File: a.py\n-nothing like this\n+z\n"}, ctx)
    assert bad["success"] is False and "Failed to update a.py" in bad["error"]
    assert (await run("patch", {"mode": "patch", "patch": "just text"}, ctx))["error"].startswith(
        "Failed to parse patch"
    )


async def test_search_files_content_modes(ctx: ToolCallContext) -> None:
    await ctx.backend.write_file(ctx.task_id, "src/a.py", b"def foo():\n    return 1\n")
    await ctx.backend.write_file(ctx.task_id, "src/b.py", b"foo = 2\n")
    await ctx.backend.write_file(ctx.task_id, "notes.md", b"foo in docs\n")
    await ctx.backend.write_file(ctx.task_id, "img.bin", b"\x00foo")
    await ctx.backend.write_file(ctx.task_id, ".git/objects/x", b"foo")
    found = await run("search_files", {"pattern": r"foo\b"}, ctx)
    assert found == {
        "total_count": 3,
        "matches": [
            {"path": "./notes.md", "line": 1, "content": "foo in docs"},
            {"path": "./src/a.py", "line": 1, "content": "def foo():"},
            {"path": "./src/b.py", "line": 1, "content": "foo = 2"},
        ],
    }
    py = await run(
        "search_files", {"pattern": "foo", "path": "src", "file_glob": "*.py", "output_mode": "files_only"}, ctx
    )
    assert py == {"total_count": 2, "files": ["src/a.py", "src/b.py"]}
    counts = await run("search_files", {"pattern": "o", "output_mode": "count", "path": "src"}, ctx)
    assert counts == {"total_count": 2, "counts": {"src/a.py": 1, "src/b.py": 1}}  # lines, as grep -c counts
    context = await run("search_files", {"pattern": "return", "context": 1, "path": "src/a.py"}, ctx)
    assert [m["line"] for m in context["matches"]] == [1, 2]
    paged = await run("search_files", {"pattern": "foo", "limit": 1, "offset": 1}, ctx)
    assert paged["total_count"] == 3 and len(paged["matches"]) == 1 and paged["truncated"] is True
    assert await run("search_files", {"pattern": "zzz"}, ctx) == {"total_count": 0}
    with pytest.raises(ToolArgumentError, match="invalid regular expression"):
        await run("search_files", {"pattern": "(unclosed"}, ctx)


async def test_search_files_by_name(ctx: ToolCallContext) -> None:
    await ctx.backend.write_file(ctx.task_id, "src/a.py", b"")
    await ctx.backend.write_file(ctx.task_id, "src/deep/b.py", b"")
    await ctx.backend.write_file(ctx.task_id, "c.txt", b"")
    assert await run("search_files", {"pattern": "*.py", "target": "files"}, ctx) == {
        "total_count": 2,
        "files": ["./src/a.py", "./src/deep/b.py"],
    }
    assert (await run("search_files", {"pattern": "**/b.py", "target": "find"}, ctx))["files"] == ["./src/deep/b.py"]


async def test_todo_replace_merge_and_per_task_state(ctx: ToolCallContext) -> None:
    empty = {"todos": [], "summary": {"total": 0, "pending": 0, "in_progress": 0, "completed": 0, "cancelled": 0}}
    assert await run("todo", {}, ctx) == empty
    plan = [
        {"id": "1", "content": "write tests", "status": "completed"},
        {"id": "2", "content": "fix bug", "status": "x"},
    ]
    answer = await run("todo", {"todos": plan}, ctx)
    assert answer["todos"][1] == {"id": "2", "content": "fix bug", "status": "pending"}
    merged = await run(
        "todo", {"todos": [{"id": "2", "status": "in_progress"}, {"id": "3", "content": "ship"}], "merge": True}, ctx
    )
    assert [(t["id"], t["status"]) for t in merged["todos"]] == [
        ("1", "completed"),
        ("2", "in_progress"),
        ("3", "pending"),
    ]
    assert merged["summary"] == {"total": 3, "pending": 1, "in_progress": 1, "completed": 1, "cancelled": 0}
    other = ToolCallContext("other", ctx.backend)
    assert await run("todo", {}, other) == empty


@pytest.mark.parametrize("path", ["../escape.txt", "x/../../escape.txt"])
async def test_file_tools_refuse_escapes(ctx: ToolCallContext, path: str) -> None:
    assert "escapes the workspace" in (await run("read_file", {"path": path}, ctx))["error"]
    assert "escapes the workspace" in (await run("write_file", {"path": path, "content": "x"}, ctx))["error"]
    assert (await run("patch", {"path": path, "old_string": "a", "new_string": "b"}, ctx))["success"] is False
