"""The shipped swe_lite repositories: for every one, inside bwrap, the hidden tests fail on the buggy
repository and pass after the reference fix (the patch command, and the equivalent patch tool calls);
the hidden tests are not part of what the model sees; the index is in sync with the repositories."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from hermes_env.backends.bwrap import BwrapBackend
from hermes_env.tool_context import ToolContext

SWE = Path(__file__).resolve().parents[2] / "python" / "hermes_env" / "environments" / "swe_lite"
ROWS = [json.loads(line) for line in (SWE / "tasks.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]


def _load_builder() -> Any:
    spec = importlib.util.spec_from_file_location("swe_build_index", SWE / "repos" / "build_index.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_index_is_in_sync_with_repos() -> None:
    builder = _load_builder()
    assert (SWE / "tasks.jsonl").read_text(encoding="utf-8") == builder.render(builder.build_rows())
    assert len(ROWS) >= 20


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_repo_layout(row: dict[str, Any]) -> None:
    repo = SWE / row["repo"]
    assert repo.is_dir() and (SWE / row["hidden_tests"]).is_dir()
    assert not any("test" in p.name for p in repo.rglob("*")), "hidden tests must stay outside the repo dir"
    for rel in row["files"]:
        lines = (repo / rel).read_text().count("\n")
        assert 20 <= lines <= 80, (rel, lines)
    assert row["issue"] and row["issue"] in row["prompt"]


async def _run_hidden_tests(ctx: ToolContext, row: dict[str, Any]) -> Any:
    await ctx.terminal("rm -rf hidden_tests", timeout=10)
    await ctx.upload_dir(SWE / row["hidden_tests"], "hidden_tests")
    return await ctx.terminal(row["test_command"], timeout=60)


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
async def test_hidden_tests_fail_before_and_pass_after_fix(bwrap: BwrapBackend, row: dict[str, Any]) -> None:
    async with ToolContext(f"{row['id']}-buggy", bwrap) as ctx:
        await ctx.upload_dir(SWE / row["repo"], ".")
        res = await _run_hidden_tests(ctx, row)
        assert not res.ok, f"{row['id']}: hidden tests pass on the buggy repo:\n{res.output}"
        # A real test failure, not a broken test module.
        assert "FAILED" in res.output and "ImportError" not in res.output and "ModuleNotFoundError" not in res.output

    async with ToolContext(f"{row['id']}-patched", bwrap) as ctx:
        await ctx.upload_dir(SWE / row["repo"], ".")
        applied = await ctx.terminal(row["solution"], timeout=30)
        assert applied.ok, f"{row['id']}: reference patch does not apply:\n{applied.output}"
        res = await _run_hidden_tests(ctx, row)
        assert res.ok, f"{row['id']}: hidden tests fail after the fix:\n{res.output}"
        assert "Ran " in res.output and "Ran 0 tests" not in res.output

    async with ToolContext(f"{row['id']}-tools", bwrap) as ctx:
        await ctx.upload_dir(SWE / row["repo"], ".")
        for call in row["solution_tool_calls"]:
            out = await ctx.call_tool(call["name"], call["arguments"])
            assert json.loads(out)["success"] is True, out
        res = await _run_hidden_tests(ctx, row)
        assert res.ok, f"{row['id']}: hidden tests fail after the patch tool calls:\n{res.output}"


async def test_workspace_cannot_shadow_the_test_runner(bwrap: BwrapBackend) -> None:
    row = ROWS[0]
    async with ToolContext("shadow", bwrap) as ctx:
        await ctx.upload_dir(SWE / row["repo"], ".")
        # A reward hack: a fake unittest that reports success, and a planted always-passing hidden test.
        await ctx.write_file("unittest/__init__.py", "import sys\nsys.exit(0)\n")
        await ctx.write_file("unittest/__main__.py", "import sys\nsys.exit(0)\n")
        await ctx.write_file("hidden_tests/test_planted.py", "import unittest\n")
        res = await _run_hidden_tests(ctx, row)
        assert not res.ok and "FAILED" in res.output, res.output
