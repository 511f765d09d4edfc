"""Every way a scripted /generate server can fail on a later turn, at the managed server: the call raises
PolicyCallError with the right kind, and the branch the rollout built so far is left exactly as it was."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from fault_checks import FAULT_CAUSE
from hermes_env.errors import PolicyCallError
from hermes_env.managed import managed_server
from hermes_env.testing.scripted_vllm import FAULT_KINDS, FaultAtTurn, ScriptedVLLMServer
from hermes_env.tools import REGISTRY

TOOLS = [REGISTRY.get("terminal").schema]
CALL = '<tool_call>\n{"name": "terminal", "arguments": {"command": "ls"}}\n</tool_call>'


def test_every_fault_kind_has_an_expected_cause() -> None:
    assert set(FAULT_CAUSE) | {"slow"} == set(FAULT_KINDS)


@pytest.fixture
async def manager_for(scripted_server: Any) -> AsyncIterator[Any]:
    made: list[Any] = []

    def make(responder: Any, timeout: float = 30) -> tuple[Any, ScriptedVLLMServer]:
        from atroposlib.envs.server_handling.server_manager import ServerManager

        server = scripted_server(responder)
        manager = ServerManager([server.server_config(timeout=timeout)])
        made.append(manager)
        return manager, server

    yield make
    for manager in made:
        for s in manager.servers:
            if s.check_task is not None:
                s.check_task.cancel()


def _turns(responder_turns: list[str]) -> Any:
    def respond(request: Any) -> str:
        turn = request.prompt_text.count("<|im_start|>assistant") - 1
        return responder_turns[min(turn, len(responder_turns) - 1)]

    return respond


@pytest.mark.parametrize("fault", sorted(FAULT_CAUSE))
async def test_scripted_fault_on_turn_2_raises_its_kind_and_changes_nothing(
    manager_for: Any, tok: Any, fault: str
) -> None:
    # A short request timeout only where the server is meant to hang: a loaded machine must not time out the rest.
    manager, server = manager_for(FaultAtTurn(_turns([CALL, "Done."]), fault, turn=1), 2 if fault == "hang" else 30)
    async with managed_server(manager, tok) as m:
        messages: list[dict[str, Any]] = [{"role": "user", "content": "List the files."}]
        first = await m.chat_completion(messages=messages, tools=TOOLS, max_tokens=64)
        reply = first.choices[0].message
        assert reply.tool_calls and reply.parse_issues == []  # type: ignore[attr-defined]
        messages.append(reply.model_dump(exclude_none=True))
        messages.append({"role": "tool", "tool_call_id": reply.tool_calls[0].id, "content": "a.txt"})
        before = [(b.trajectory.tokens, b.trajectory.masks, b.trajectory.logprobs) for b in m.get_state()["branches"]]
        with pytest.raises(PolicyCallError) as info:
            await m.chat_completion(messages=messages, tools=TOOLS, max_tokens=64)
        assert info.value.kind == FAULT_CAUSE[fault], str(info.value)
        after = [(b.trajectory.tokens, b.trajectory.masks, b.trajectory.logprobs) for b in m.get_state()["branches"]]
        assert after == before
    assert server.faults and set(server.faults) == {fault}


async def test_scripted_slow_answer_within_the_timeout_is_no_fault(manager_for: Any, tok: Any) -> None:
    manager, server = manager_for(FaultAtTurn(_turns([CALL, "Done."]), "slow", turn=0, seconds=0.3))
    async with managed_server(manager, tok) as m:
        reply = (await m.chat_completion(messages=[{"role": "user", "content": "go"}], tools=TOOLS)).choices[0]
    assert reply.message.tool_calls and server.faults == ["slow"]


async def test_scripted_parse_issues_reach_the_message(manager_for: Any, tok: Any) -> None:
    bad = '<tool_call>\n{"name": "terminal", "arguments": {"command": </tool_call>'
    manager, _ = manager_for(_turns([bad]))
    async with managed_server(manager, tok) as m:
        completion = await m.chat_completion(messages=[{"role": "user", "content": "go"}], tools=TOOLS)
    issues = completion.choices[0].message.parse_issues  # type: ignore[attr-defined]
    assert [i["kind"] for i in issues] == ["malformed_json"] and issues[0]["offset"] > 0
    assert json.dumps(issues)  # plain data: it can be logged and written
