"""Rubric and ranking judges: verdict parsing, prompts and replies kept, through a scripted chat server."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hermes_env.judges import JudgeChat
from hermes_env.judges.rewards import RankingJudge, RubricJudge, parse_ranking, parse_rubric_score, transcript
from hermes_env.testing.scripted_openai import ScriptedOpenAIServer

CALL = {"id": "c1", "type": "function", "function": {"name": "terminal", "arguments": '{"command": "ls"}'}}
ROLLOUT = [
    {"role": "system", "content": "sys"},
    {"role": "user", "content": "List the files."},
    {"role": "assistant", "content": "", "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "c1", "content": "a.txt\n" * 1000},
    {"role": "assistant", "content": "There is a.txt."},
]


@pytest.mark.parametrize(
    ("reply", "score"),
    [("Good work.\nSCORE: 7", 0.7), ("score: 12", 1.0), ("SCORE: 3 ... SCORE: 9.5", 0.95), ("seven", None)],
)
def test_parse_rubric_score(reply: str, score: float | None) -> None:
    assert parse_rubric_score(reply) == (pytest.approx(score) if score is not None else None)


def test_parse_ranking_needs_one_score_per_attempt() -> None:
    good = 'Here: {"scores": [{"id": 2, "score": 0.2, "why": "x"}, {"id": 1, "score": 1.5}]}'
    assert parse_ranking(good, 2) == [1.0, 0.2]
    assert parse_ranking('{"scores": [{"id": 1, "score": 0.2}]}', 2) is None  # attempt 2 missing
    assert parse_ranking('{"scores": [{"id": 1, "score": 0.2}, {"id": 1, "score": 0.3}]}', 1) is None
    assert parse_ranking('{"scores": [{"id": 1, "score": "high"}]}', 1) is None
    assert parse_ranking("no json", 1) is None


def test_transcript_leaves_out_the_system_prompt_and_cuts_long_output() -> None:
    text = transcript(ROLLOUT, max_chars=20)
    assert "sys" not in text and "[calls terminal" in text and "[... cut]" in text


def test_a_rubric_judge_needs_a_rubric() -> None:
    with pytest.raises(ValueError, match="needs a rubric"):
        RubricJudge(JudgeChat("http://127.0.0.1:9"), "  ")


async def test_rubric_judge_averages_votes_and_keeps_everything() -> None:
    replies = iter(["Fine.\nSCORE: 8", "I cannot tell."])
    with ScriptedOpenAIServer(lambda messages, tools: next(replies)) as server:
        judge = RubricJudge(JudgeChat(server.base_url, max_concurrency=1), "Names every file.", votes=2)
        score, meta = await judge.score("List the files.", ROLLOUT)
        sent = server.requests[0]["messages"]
    assert score == pytest.approx(0.4)
    assert meta["verdicts"] == [pytest.approx(0.8), None] and meta["unreadable"] == 1
    assert meta["replies"] == ["Fine.\nSCORE: 8", "I cannot tell."] and meta["prompt"] == sent
    assert "Names every file." in sent[1]["content"] and "There is a.txt." in sent[1]["content"]


async def test_ranking_judge_scores_a_group_in_one_call() -> None:
    def judge(messages: list[dict[str, Any]], tools: Any) -> str:
        assert "## Attempt 1" in messages[1]["content"] and "## Attempt 2" in messages[1]["content"]
        return json.dumps({"scores": [{"id": 1, "score": 0.9, "why": "named it"}, {"id": 2, "score": 0.1}]})

    with ScriptedOpenAIServer(judge) as server:
        scores, meta = await RankingJudge(JudgeChat(server.base_url)).rank("List the files.", [ROLLOUT, ROLLOUT[:3]])
        assert len(server.requests) == 1
    assert scores == [0.9, 0.1] and meta["unreadable"] is False and "named it" in meta["reply"]

    with ScriptedOpenAIServer(lambda messages, tools: "they are all fine") as server:
        scores, meta = await RankingJudge(JudgeChat(server.base_url)).rank("t", [ROLLOUT, ROLLOUT])
    assert scores == [0.0, 0.0] and meta["unreadable"] is True
