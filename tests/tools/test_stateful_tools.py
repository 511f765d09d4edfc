"""terminal_stateful (hermes-agent's atropos/ integration): the slot's long-lived bash and tmux session, as tools."""

from __future__ import annotations

import json
from typing import Any

from hermes_env.backends import ExecutionBackend
from hermes_env.tools import REGISTRY, ToolCallContext, get_tool_definitions


async def run(name: str, args: dict[str, Any], ctx: ToolCallContext) -> dict[str, Any]:
    return json.loads(await REGISTRY.dispatch(name, args, ctx))


def test_the_toolset_is_offered_by_name() -> None:
    names = [t["function"]["name"] for t in get_tool_definitions(["terminal_stateful"])]
    assert names == ["terminal_stateful", "tmux"]


async def test_state_persists_across_calls(pool_ctx: ToolCallContext) -> None:
    await run("terminal_stateful", {"command": "mkdir -p d && cd d && export X=42"}, pool_ctx)
    assert await run("terminal_stateful", {"command": "echo $X $(basename $PWD)"}, pool_ctx) == {
        "output": "42 d",
        "exit_code": 0,
        "error": None,
    }
    assert (await run("terminal_stateful", {"command": "exit_code() { return 3; }; exit_code"}, pool_ctx))[
        "exit_code"
    ] == 3


async def test_tmux_send_keys_and_capture(pool_ctx: ToolCallContext) -> None:
    started = await run("tmux", {"action": "start"}, pool_ctx)
    if started["error"] and "not installed" in started["error"]:
        import pytest

        pytest.skip(started["error"])
    sent = await run(
        "tmux", {"action": "send_keys", "keys": ["echo tmux-$((6*7))", "Enter"], "min_wait_s": 0.5}, pool_ctx
    )
    assert sent["exit_code"] == 0 and "tmux-42" in sent["output"]
    assert "tmux-42" in (await run("tmux", {"action": "capture"}, pool_ctx))["output"]
    assert (await run("tmux", {"action": "send_keys"}, pool_ctx))["error"].startswith("send_keys needs 'keys'")


async def test_other_backends_answer_a_clear_error(backend: ExecutionBackend) -> None:
    ctx = ToolCallContext("t", backend)
    for name, args in (("terminal_stateful", {"command": "ls"}), ("tmux", {"action": "capture"})):
        answer = await run(name, args, ctx)
        assert answer["exit_code"] == -1 and "--env.terminal_backend sandbox" in answer["error"]
