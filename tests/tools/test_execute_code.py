"""execute_code: the model's script runs in the sandbox and calls the real tools (local, bwrap)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hermes_env.backends import ExecutionBackend
from hermes_env.tools import REGISTRY, ToolCallContext
from hermes_env.tools.code_execution_tool import MAX_TOOL_CALLS, stub_module

ENABLED = ("terminal", "read_file", "write_file", "patch", "search_files", "execute_code")


@pytest.fixture
def ctx(backend: ExecutionBackend) -> ToolCallContext:
    return ToolCallContext("task", backend, timeout=20, background_timeout=60, enabled_tools=ENABLED)


async def run(code: str, ctx: ToolCallContext) -> dict[str, Any]:
    return json.loads(await REGISTRY.dispatch("execute_code", {"code": code}, ctx))


async def test_script_calls_tools_and_prints(ctx: ToolCallContext) -> None:
    code = (
        "from hermes_tools import terminal, write_file, read_file, patch, search_files\n"
        "write_file('m.py', 'x = 1\\n')\n"
        "print(patch('m.py', 'x = 1', 'x = 2')['success'])\n"
        "print(read_file('m.py')['content'])\n"
        "print(terminal('python3 m.py && echo ok')['output'])\n"
        "print(search_files('x = ', path='.')['total_count'])\n"
    )
    result = await run(code, ctx)
    assert result["status"] == "success" and result["tool_calls_made"] == 5
    assert result["output"] == "True\n     1|x = 2\nok\n1\n"
    assert set(result) == {"status", "output", "tool_calls_made", "duration_seconds"}
    assert await ctx.backend.list_files(ctx.task_id) == ["m.py"]  # the script's files are gone


async def test_errors_timeouts_and_limits(ctx: ToolCallContext) -> None:
    failed = await run("import sys\nprint('partial')\nsys.exit('boom')", ctx)
    assert failed["status"] == "error" and failed["error"] == "boom\n"
    assert failed["output"] == "partial\n\n--- stderr ---\nboom\n"
    assert (await run("   ", ctx)) == {"error": "No code provided."}
    ctx.timeout = ctx.max_timeout = 1.0
    slow = await run("import time\ntime.sleep(30)", ctx)
    assert slow["status"] == "timeout" and slow["error"] == "Script timed out after 1s and was killed."
    ctx.timeout = ctx.max_timeout = 60.0
    many = await run(
        f"from hermes_tools import terminal\nr = [terminal('true') for _ in range({MAX_TOOL_CALLS + 2})]\nprint(r[-1])",
        ctx,
    )
    assert many["tool_calls_made"] == MAX_TOOL_CALLS and "Tool call limit reached (50)" in many["output"]


async def test_only_offered_tools_get_stubs(ctx: ToolCallContext) -> None:
    ctx.enabled_tools = ("read_file", "execute_code")
    result = await run("from hermes_tools import terminal", ctx)
    assert result["status"] == "error" and "cannot import name 'terminal'" in result["error"]
    assert "def read_file(" in stub_module(["read_file"]) and "def terminal(" not in stub_module(["read_file"])
