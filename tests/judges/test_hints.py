"""Hindsight hints: reading votes, the next state, the hinted context, majority over n samples."""

from __future__ import annotations

from typing import Any

import pytest
from hermes_env.errors import JudgeError
from hermes_env.judges import JudgeChat
from hermes_env.judges.chat import chat_url
from hermes_env.judges.hints import HintJudge, hinted_messages, next_state, parse_hint_vote
from hermes_env.testing.scripted_openai import ScriptedOpenAIServer

CALL = {"id": "c1", "type": "function", "function": {"name": "terminal", "arguments": '{"command": "cat a"}'}}
MESSAGES = [
    {"role": "system", "content": "sys"},
    {"role": "user", "content": "Print a."},
    {"role": "assistant", "content": "", "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "c1", "content": "cat: a: No such file or directory\n[exit code 1]"},
    {"role": "assistant", "content": "It is empty."},
]


@pytest.mark.parametrize(
    ("reply", "verdict", "hint"),
    [
        ("VERDICT: HINT\nHINT: List the folder first; a is missing.", "hint", "List the folder first; a is missing."),
        ("verdict: none", "none", ""),
        ("Thinking... VERDICT: NONE. Actually VERDICT: HINT\nHINT: Use ls before cat.", "hint", "Use ls before cat."),
        ("VERDICT: HINT\nHINT: ok", "unreadable", "ok"),  # too short to be a hint
        ("I think the agent did fine.", "unreadable", ""),
    ],
)
def test_parse_hint_vote(reply: str, verdict: str, hint: str) -> None:
    assert parse_hint_vote(reply) == {"verdict": verdict, "hint": hint}


def test_next_state_is_what_followed_the_turn() -> None:
    assert next_state(MESSAGES, 2, 4000) == ("tool", "cat: a: No such file or directory\n[exit code 1]")
    assert next_state(MESSAGES, 2, 5) == ("tool", "cat: \n[... cut]")
    assert next_state(MESSAGES, 4, 4000) is None


def test_hinted_messages_adds_the_hint_to_the_last_user_message_only() -> None:
    hinted = hinted_messages(MESSAGES[:2], "Check that a exists.")
    assert hinted[1]["content"] == "Print a.\n\n[hint for this step] Check that a exists."
    assert MESSAGES[1]["content"] == "Print a."  # the rollout's own messages are untouched
    assert hinted_messages([{"role": "system", "content": "s"}], "h")[-1] == {
        "role": "user",
        "content": "[hint for this step] h",
    }


async def test_majority_of_votes_decides_and_everything_is_kept() -> None:
    replies = iter(["VERDICT: HINT\nHINT: The file a does not exist; list first.", "VERDICT: NONE", "no idea"])
    with ScriptedOpenAIServer(lambda messages, tools: next(replies)) as server:
        judge = HintJudge(JudgeChat(server.base_url, max_concurrency=1), votes=3)
        judgement = await judge.judge(MESSAGES, 2, turn=0)
    assert judgement.hint is None  # one of three votes is not a majority
    assert [v["verdict"] for v in judgement.votes] == ["hint", "none", "unreadable"]
    assert judgement.votes[2]["reply"] == "no idea"
    assert "No such file or directory" in judgement.prompt[1]["content"]

    replies = iter(["VERDICT: HINT\nHINT: a is missing.", "VERDICT: HINT\nHINT: The file a does not exist.", "x"])
    with ScriptedOpenAIServer(lambda messages, tools: next(replies)) as server:
        judge = HintJudge(JudgeChat(server.base_url, max_concurrency=1), votes=3)
        judgement = await judge.judge(MESSAGES, 2, turn=0)
        assert server.requests[0]["max_tokens"] == 256
    assert judgement.hint == "The file a does not exist."  # the longest of the majority's hints


async def test_a_judge_that_cannot_be_reached_raises_judge_error() -> None:
    assert chat_url("http://h:1") == chat_url("http://h:1/v1/") == "http://h:1/v1/chat/completions"
    with pytest.raises(JudgeError, match="could not be asked"):
        await JudgeChat("http://127.0.0.1:9").complete([{"role": "user", "content": "hi"}])


async def test_no_next_state_asks_no_judge() -> None:
    class NoCalls:
        async def complete(self, messages: Any, n: int = 1) -> list[str]:
            raise AssertionError("the judge must not be asked")

    judgement = await HintJudge(NoCalls(), votes=3).judge(MESSAGES, 4, turn=1)  # type: ignore[arg-type]
    assert judgement.hint is None and judgement.votes == []
