"""The two drop-in examples run as users run them (``python examples/<name>.py demo --out FILE``) and write
correct groups: complete, token-consistent, and scored as the scripted policy's moves deserve."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.e2e


def _demo(script: str, out: Path, *flags: str) -> list[dict[str, Any]]:
    env = {**os.environ, "WANDB_MODE": "disabled"}
    cmd = [sys.executable, f"examples/{script}", "demo", "--groups", "4", "--group-size", "4", "--out", str(out),
           "--seed", "3", *flags]  # fmt: skip
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=400, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    groups = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(groups) == 4
    for group in groups:
        n = len(group["scores"])
        assert n == 4 and len(group["tokens"]) == len(group["masks"]) == len(group["inference_logprobs"]) == n
        for tokens, masks, logprobs in zip(group["tokens"], group["masks"], group["inference_logprobs"], strict=True):
            assert len(tokens) == len(masks) == len(logprobs)
            assert any(m != -100 for m in masks)  # the model's turns are trained
    return groups


def _calls(messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (c["function"]["name"], json.loads(c["function"]["arguments"]))
        for m in messages
        for c in m.get("tool_calls") or []
    ]


def test_upstream_style_env_demo(tmp_path: Path) -> None:
    sys.path.insert(0, str(REPO / "examples"))
    try:
        from upstream_style_env import EVAL_TASKS, TRAIN_TASKS
    finally:
        sys.path.remove(str(REPO / "examples"))
    solutions = {t["prompt"]: t["solution"] for t in TRAIN_TASKS + EVAL_TASKS}
    groups = _demo("upstream_style_env.py", tmp_path / "up.jsonl")
    scores = []
    for group in groups:
        for score, messages in zip(group["scores"], group["messages"], strict=True):
            prompt = next(m["content"] for m in messages if m["role"] == "user")
            ran = [args.get("command") for name, args in _calls(messages) if name == "terminal"]
            # The reward (a synchronous, dict-reading compute_reward) pays exactly the rollouts that ran the fix.
            assert score == (1.0 if solutions[prompt] in ran else 0.0), (score, ran)
            tools_offered = json.dumps(messages)
            scores.append(score)
            assert "web_search" not in tools_offered
    assert 0 < sum(scores) < len(scores)  # rewards vary within the run


def test_upstream_agent_env_demo(tmp_path: Path) -> None:
    groups = _demo("upstream_agent_env.py", tmp_path / "agent_env.jsonl")
    scores = []
    for group in groups:
        assert len(group["overrides"]) == 4
        for score, messages, override in zip(group["scores"], group["messages"], group["overrides"], strict=True):
            meta = override["score_metadata"]
            # verify_and_score_trajectory's metadata travels with the group and agrees with the score.
            assert meta["tests_passed"] is (score == 1.0)
            if _calls(messages):
                assert meta["module"].endswith(".py")
                assert meta["verification_messages"][0]["content"].startswith("<tool_response>")
            else:
                assert meta["error"] == "No tool calls were made by the agent"
            patched = [args for name, args in _calls(messages) if name == "patch"]
            assert score == (1.0 if patched else 0.0)
            assert all(set(a) == {"path", "old_string", "new_string"} for a in patched)  # hermes-agent's arguments
            scores.append(score)
    assert 0 < sum(scores) < len(scores)
