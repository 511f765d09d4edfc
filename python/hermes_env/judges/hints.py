"""Hindsight hints: a judge reads an assistant turn and what came of it, and says what would have helped.

For on-policy distillation in the hinted context (``teacher_context: hint``), as in hermes-agent's
``agentic_opd_env``: the "next state" of an assistant turn (the tool output its calls produced, or
the user's reply) often shows what the turn should have done (an error message, a failing test).
A judge model is asked ``votes`` times, independently, whether it does; when more than half of
the votes give a hint (an unreadable reply counts as none), the turn gets a hint (the longest of
those votes' hints, as the most specific one), and the teacher scores the student's own tokens of
that turn after the original conversation with the hint added (:func:`hinted_messages`). A turn
with no next state (the last one) or no majority gets no hint and is scored in the student's own
context.

The prompt and every vote's raw reply are kept (``rollout_info[i]["distill"]["hints"]``).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hermes_env.judges.chat import JudgeChat

__all__ = [
    "HINT_SYSTEM_PROMPT",
    "HintJudge",
    "HintJudgement",
    "hint_prompt",
    "hinted_messages",
    "next_state",
    "parse_hint_vote",
]

HINT_SYSTEM_PROMPT = (
    "You review one step of an AI agent's work. You see the agent's reply at step t and what happened right "
    "after it: the output of the tools it called, or the user's answer. Decide whether what happened after "
    "shows something the agent should have done differently at step t (an error, a wrong path, a missing "
    "step). A tool that simply succeeded shows nothing to fix.\n"
    "Answer in exactly one of these two forms:\n"
    "VERDICT: HINT\nHINT: <one to three sentences the agent should have known at step t>\n"
    "or\n"
    "VERDICT: NONE"
)

_VERDICT = re.compile(r"VERDICT\s*:\s*(HINT|NONE)", re.IGNORECASE)
_HINT = re.compile(r"HINT\s*:\s*(?!\s*(?:HINT|NONE)\b)(.+)", re.IGNORECASE | re.DOTALL)
MIN_HINT_CHARS = 8


def _text_of(message: Mapping[str, Any]) -> str:
    content = message.get("content") or ""
    if not isinstance(content, str):  # content parts
        content = " ".join(str(p.get("text", "")) if isinstance(p, Mapping) else str(p) for p in content)
    calls = message.get("tool_calls") or []
    rendered = [f"[call {c['function']['name']}({c['function'].get('arguments', '')})]" for c in calls]
    return "\n".join(part for part in (content.strip(), *rendered) if part)


def next_state(messages: Sequence[Mapping[str, Any]], assistant_index: int, max_chars: int) -> tuple[str, str] | None:
    """``(role, text)`` of what followed the assistant message at ``assistant_index``: its tool results (and a
    user reply), each cut to ``max_chars``; None when nothing followed."""
    parts: list[str] = []
    role: str | None = None
    for message in messages[assistant_index + 1 :]:
        if message.get("role") == "assistant":
            break
        role = role or str(message.get("role"))
        text = _text_of(message)
        if len(text) > max_chars:
            text = text[:max_chars] + "\n[... cut]"
        parts.append(text)
        if message.get("role") == "user":
            break
    if role is None:
        return None
    return role, "\n---\n".join(parts)


def hint_prompt(assistant_text: str, state_role: str, state_text: str) -> list[dict[str, str]]:
    """The judge's messages for one turn."""
    user = (
        f"## The agent's reply at step t\n{assistant_text or '(empty)'}\n\n"
        f"## What happened after (role: {state_role})\n{state_text or '(empty)'}\n\n"
        "Give your verdict now, in the required form."
    )
    return [{"role": "system", "content": HINT_SYSTEM_PROMPT}, {"role": "user", "content": user}]


def parse_hint_vote(reply: str) -> dict[str, Any]:
    """``{"verdict": "hint" | "none" | "unreadable", "hint": str}`` from one judge reply (its last verdict)."""
    verdicts = _VERDICT.findall(reply)
    if not verdicts:
        return {"verdict": "unreadable", "hint": ""}
    verdict = verdicts[-1].lower()
    if verdict == "none":
        return {"verdict": "none", "hint": ""}
    after = reply[[m.end() for m in _VERDICT.finditer(reply)][-1] :]
    match = _HINT.search(after)
    hint = match.group(1).strip() if match else ""
    if len(hint) < MIN_HINT_CHARS:
        return {"verdict": "unreadable", "hint": hint}
    return {"verdict": "hint", "hint": hint}


def hinted_messages(messages: Sequence[Mapping[str, Any]], hint: str) -> list[dict[str, Any]]:
    """``messages`` with ``hint`` added to the last user message (a new user message if there is none)."""
    out = [copy.deepcopy(dict(m)) for m in messages]
    note = f"[hint for this step] {hint.strip()}"
    for message in reversed(out):
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            message["content"] = f"{message['content']}\n\n{note}"
            return out
    out.append({"role": "user", "content": note})
    return out


@dataclass
class HintJudgement:
    """One turn's verdict: the hint (or None), each vote, and the prompt the judge read."""

    turn: int
    hint: str | None
    votes: list[dict[str, Any]] = field(default_factory=list)
    prompt: list[dict[str, str]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"turn": self.turn, "hint": self.hint, "votes": self.votes, "prompt": self.prompt}


class HintJudge:
    """Majority-voted hindsight hints from a chat server."""

    def __init__(self, chat: JudgeChat, *, votes: int = 3, max_next_state_chars: int = 4000) -> None:
        if votes < 1:
            raise ValueError(f"votes must be at least 1, got {votes}")
        self.chat = chat
        self.votes = votes
        self.max_next_state_chars = max_next_state_chars

    async def judge(self, messages: Sequence[Mapping[str, Any]], assistant_index: int, turn: int) -> HintJudgement:
        """The verdict on the assistant message ``messages[assistant_index]`` (model turn ``turn``)."""
        state = next_state(messages, assistant_index, self.max_next_state_chars)
        if state is None:
            return HintJudgement(turn, None)
        prompt = hint_prompt(_text_of(messages[assistant_index]), *state)
        replies = await self.chat.complete(prompt, n=self.votes)
        votes = [{**parse_hint_vote(r), "reply": r} for r in replies]
        hints = [v["hint"] for v in votes if v["verdict"] == "hint"]
        hint = max(hints, key=len) if len(hints) * 2 > len(votes) else None
        return HintJudgement(turn, hint, votes, prompt)
