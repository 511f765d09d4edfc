"""What every fault test asserts about written data, and the small task set the fault runs use."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

# Why a written rollout may have ended; "failed" never reaches the file.
FINISHED_END_REASONS = {"stop", "length", "turn_limit", "context_limit", "rollout_budget", "repeated_tool_calls"}

# Two-turn tasks (a tool call, then an answer); checks fail in an empty workspace.
TASKS = [
    {
        "id": "hello",
        "prompt": "Create a file hello.txt that contains exactly the line: hi",
        "setup": "",
        "check": "grep -qx hi hello.txt",
        "solution": "echo hi > hello.txt",
    },
    {
        "id": "count",
        "prompt": "Count the lines of data.txt and write the number to count.txt.",
        "setup": "seq 1 17 > data.txt",
        "check": 'test "$(tr -d " \\n" < count.txt)" = 17',
        "solution": "wc -l < data.txt > count.txt",
    },
]


def write_tasks(path: Path, tasks: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    return path


def assert_trainable_group(group: dict[str, Any], group_size: int, vocab_size: int) -> None:
    """A complete group of finished rollouts: aligned arrays, masks token-or--100, trained logprobs finite and <= 0."""
    n = len(group["tokens"])
    assert n == group_size, f"a partial group was written ({n} of {group_size} rollouts)"
    assert len(group["masks"]) == len(group["scores"]) == len(group["inference_logprobs"]) == n
    assert len(group["end_reasons"]) == n and set(group["end_reasons"]) <= FINISHED_END_REASONS, group["end_reasons"]
    for tokens, masks, logprobs, score in zip(
        group["tokens"], group["masks"], group["inference_logprobs"], group["scores"], strict=True
    ):
        assert math.isfinite(score)
        assert len(tokens) == len(masks) == len(logprobs) > 0
        assert any(m != -100 for m in masks), "a rollout with nothing trained"
        for t, m, lp in zip(tokens, masks, logprobs, strict=True):
            assert isinstance(t, int) and 0 <= t < vocab_size
            assert m in (t, -100)
            if m == -100:
                assert lp == 1.0
            else:
                assert math.isfinite(lp) and lp <= 0.0


def read_trainable(path: Path, group_size: int, vocab_size: int) -> list[dict[str, Any]]:
    """Every line of ``path`` whole and a trainable group; returns the groups."""
    data = path.read_bytes()
    assert data.endswith(b"\n"), "the jsonl ends with a torn line"
    groups = [json.loads(line) for line in data.decode("utf-8").splitlines()]
    for group in groups:
        assert_trainable_group(group, group_size, vocab_size)
    return groups


def user_prompt(conversation: list[dict[str, Any]]) -> str:
    return next(m["content"] for m in conversation if m["role"] == "user")
