"""LLM-judge rewards, for tasks with no programmatic check: a pointwise rubric judge and a group ranking judge.

- :class:`RubricJudge` (in the spirit of verifiers' ``JudgeRubric``): the judge reads the task, a
  rubric and one rollout's transcript, and answers ``SCORE: <0-10>``; the reward is the mean of
  ``votes`` such verdicts, divided by 10 (a verdict without a readable score counts 0).
- :class:`RankingJudge` (in the spirit of ART's RULER): the judge reads the task and every rollout
  of a group side by side and gives each a score in [0, 1] relative to the others, as JSON
  ``{"scores": [{"id": 1, "score": 0.8, "why": "..."}, ...]}``; comparing a group's attempts is
  easier for a judge than grading one in isolation, and GRPO only needs their order.

The environment adds ``judge_weight * judge score`` to each rollout's outcome score. Every prompt
and raw reply is kept in the rollout's ``rollout_info[i]["judge"]`` (the HTML view shows it). A judge
that cannot be reached raises :class:`~hermes_env.judges.chat.JudgeError` (the group is dropped);
a reply that cannot be read scores 0 and is kept, marked ``unreadable``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from hermes_env.judges.chat import JudgeChat

__all__ = [
    "RANKING_SYSTEM_PROMPT",
    "RUBRIC_SYSTEM_PROMPT",
    "RankingJudge",
    "RubricJudge",
    "parse_ranking",
    "parse_rubric_score",
    "transcript",
]

RUBRIC_SYSTEM_PROMPT = (
    "You grade the work of an AI agent that used tools to do a task. Read the task, the grading rubric and the "
    "agent's transcript, then give a score from 0 (nothing of the rubric met) to 10 (everything met). Be strict: "
    "a claim the transcript does not support earns nothing. End your answer with one line of the form\n"
    "SCORE: <integer from 0 to 10>"
)

RANKING_SYSTEM_PROMPT = (
    "You compare several attempts by an AI agent at the same task. Read the task and every attempt, then give "
    "each attempt a score between 0 and 1: better attempts get higher scores, an attempt that reaches the goal "
    "scores above one that does not, and equally good attempts get equal scores. Answer with JSON only:\n"
    '{"scores": [{"id": <attempt number>, "score": <0..1>, "why": "<one sentence>"}, ...]}'
)

_SCORE = re.compile(r"SCORE\s*:\s*(-?\d+(?:\.\d+)?)", re.IGNORECASE)


def transcript(messages: Sequence[Mapping[str, Any]], *, max_chars: int = 1500) -> str:
    """The rollout as the judge reads it: every message after the system prompt, tool output cut to ``max_chars``."""
    lines = []
    for message in messages:
        role = message.get("role")
        if role == "system":
            continue
        content = message.get("content") or ""
        if not isinstance(content, str):
            content = " ".join(str(p.get("text", "")) if isinstance(p, Mapping) else str(p) for p in content)
        if len(content) > max_chars:
            content = content[:max_chars] + " [... cut]"
        calls = "".join(
            f"\n[calls {c['function']['name']}({c['function'].get('arguments', '')})]"
            for c in message.get("tool_calls") or []
        )
        lines.append(f"[{role}] {content.strip()}{calls}")
    return "\n".join(lines)


def parse_rubric_score(reply: str) -> float | None:
    """The last ``SCORE: x`` of a reply, as a fraction of 10 clamped to [0, 1]; None when there is none."""
    found = _SCORE.findall(reply)
    if not found:
        return None
    return min(max(float(found[-1]) / 10.0, 0.0), 1.0)


def parse_ranking(reply: str, count: int) -> list[float] | None:
    """Scores of attempts ``1..count`` from the judge's JSON (clamped to [0, 1]); None unless every attempt
    has exactly one numeric score."""
    start, end = reply.find("{"), reply.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        data = json.loads(reply[start : end + 1])
    except json.JSONDecodeError:
        return None
    entries = data.get("scores") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        return None
    scores: dict[int, float] = {}
    for entry in entries:
        if not isinstance(entry, dict):
            return None
        ident, score = entry.get("id"), entry.get("score")
        if isinstance(ident, bool) or not isinstance(ident, int) or ident in scores:
            return None
        if isinstance(score, bool) or not isinstance(score, int | float):
            return None
        scores[ident] = min(max(float(score), 0.0), 1.0)
    if sorted(scores) != list(range(1, count + 1)):
        return None
    return [scores[i] for i in range(1, count + 1)]


class RubricJudge:
    """Scores one rollout against a rubric: the mean of ``votes`` verdicts, in [0, 1]."""

    def __init__(self, chat: JudgeChat, rubric: str, *, votes: int = 1) -> None:
        if not rubric.strip():
            raise ValueError("a rubric judge needs a rubric (judge_rubric): what a good answer does")
        self.chat = chat
        self.rubric = rubric
        self.votes = votes

    def prompt(self, task: str, messages: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
        user = f"## Task\n{task}\n\n## Rubric\n{self.rubric}\n\n## Transcript\n{transcript(messages)}"
        return [{"role": "system", "content": RUBRIC_SYSTEM_PROMPT}, {"role": "user", "content": user}]

    async def score(self, task: str, messages: Sequence[Mapping[str, Any]]) -> tuple[float, dict[str, Any]]:
        prompt = self.prompt(task, messages)
        replies = await self.chat.complete(prompt, n=self.votes)
        verdicts = [parse_rubric_score(r) for r in replies]
        score = sum(v or 0.0 for v in verdicts) / len(verdicts)
        meta = {
            "kind": "rubric",
            "score": score,
            "prompt": prompt,
            "replies": replies,
            "verdicts": verdicts,
            "unreadable": sum(v is None for v in verdicts),
        }
        return score, meta


class RankingJudge:
    """Scores a group's rollouts against each other in one judge call (RULER-like), each in [0, 1]."""

    def __init__(self, chat: JudgeChat) -> None:
        self.chat = chat

    def prompt(self, task: str, rollouts: Sequence[Sequence[Mapping[str, Any]]]) -> list[dict[str, str]]:
        attempts = "\n\n".join(f"## Attempt {i}\n{transcript(m)}" for i, m in enumerate(rollouts, 1))
        user = f"## Task\n{task}\n\n{attempts}\n\nScore all {len(rollouts)} attempts now, as JSON."
        return [{"role": "system", "content": RANKING_SYSTEM_PROMPT}, {"role": "user", "content": user}]

    async def rank(
        self, task: str, rollouts: Sequence[Sequence[Mapping[str, Any]]]
    ) -> tuple[list[float], dict[str, Any]]:
        prompt = self.prompt(task, rollouts)
        reply = (await self.chat.complete(prompt, n=1))[0]
        scores = parse_ranking(reply, len(rollouts))
        meta = {"kind": "ranking", "prompt": prompt, "reply": reply, "unreadable": scores is None}
        return (scores if scores is not None else [0.0] * len(rollouts)), meta
