"""What every fault test asserts about written data, and the small task set the fault runs use."""

from __future__ import annotations

import json
import math
import threading
from pathlib import Path
from typing import Any

from hermes_env.env.dataset import load_rows
from hermes_env.environments.terminal_tasks.env import TASKS_PATH

# Why a written rollout may have ended; "failed" never reaches the file.
FINISHED_END_REASONS = {"stop", "length", "turn_limit", "context_limit", "rollout_budget", "repeated_tool_calls"}

# Two of the shipped terminal tasks (the scripted policy solves each in two turns: a terminal call, then an answer).
TASKS = [row for row in load_rows(str(TASKS_PATH)) if row["id"] in ("hello_file", "make_project_tree")]

# The failure kind each scripted /generate fault is reported as ("slow" is no fault: nothing fails).
FAULT_CAUSE = {
    "http_500": "policy_http_error",
    "non_json": "policy_bad_response",
    "missing_logprobs": "policy_bad_response",
    "empty_logprob_entry": "policy_bad_response",
    "negative_token_id": "policy_bad_response",
    "out_of_vocab_token_id": "policy_bad_response",
    "nan_logprob": "policy_bad_response",
    "positive_logprob": "policy_bad_response",
    "bad_finish_reason": "policy_bad_response",
    "empty_completion": "policy_bad_response",
    "abort": "policy_bad_response",
    "drop_connection": "policy_connection_error",
    "hang": "policy_timeout",  # past the request timeout or the rollout budget
}


class FirstTaskFaulty:
    """Selects the conversations of whichever task the run hands out first.

    With one group in flight at a time and the two tasks alternating, groups 1, 3, ... fail and
    2, 4, ... are clean, whatever order the environment's seed gives the tasks.
    """

    def __init__(self) -> None:
        self.prompt: str | None = None
        self._lock = threading.Lock()

    def __call__(self, request: Any) -> bool:
        with self._lock:
            if self.prompt is None:
                self.prompt = next(t["prompt"] for t in TASKS if t["prompt"] in request.prompt_text)
        return self.prompt in request.prompt_text

    @property
    def clean_prompt(self) -> str:
        return next(t["prompt"] for t in TASKS if t["prompt"] != self.prompt)


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
