"""E2E (a): the README's main command — terminal_tasks ``demo``: ``process``, Phase 2, scripted vLLM ``/generate``
policy, Qwen3 tokenizer, bubblewrap-sandboxed tools — and the jsonl it writes."""

from __future__ import annotations

from pathlib import Path

import pytest
from e2e_helpers import assistant_text_of, read_groups, run_env
from hermes_env.backends.bwrap import bwrap_problem
from hermes_env.env.dataset import load_rows
from hermes_env.environments.terminal_tasks.env import TASKS_PATH
from hermes_env.testing import qwen3_tokenizer
from hermes_env.testing.policies import ScriptedTask, expected_success
from hermes_env.testing.scripted_vllm import scripted_logprob

pytestmark = pytest.mark.e2e

BACKEND = "bwrap" if bwrap_problem() is None else "local"


def _runs(masks: list[int]) -> list[tuple[int, int]]:
    """[start, end) of each maximal run of trained positions: one per sampled completion."""
    runs, start = [], None
    for i, m in enumerate([*masks, -100]):
        if m != -100 and start is None:
            start = i
        elif m == -100 and start is not None:
            runs.append((start, i))
            start = None
    return runs


def test_demo_writes_aligned_phase2_groups_with_right_rewards(tmp_path: Path) -> None:
    out = tmp_path / "demo.jsonl"
    proc = run_env(
        "hermes_env.environments.terminal_tasks", "demo", "--groups", "5", "--group-size", "4",
        "--backend", BACKEND, "--out", str(out), "--seed", "1",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    groups = read_groups(out)
    assert len(groups) == 5
    tokenizer = qwen3_tokenizer()
    tasks = {t["prompt"]: ScriptedTask(t["id"], t["prompt"], t["solution"]) for t in load_rows(str(TASKS_PATH))}
    scores = []
    for group in groups:
        assert len(group["tokens"]) == len(group["masks"]) == len(group["inference_logprobs"]) == 4
        for tokens, masks, logprobs, score, messages in zip(
            group["tokens"],
            group["masks"],
            group["inference_logprobs"],
            group["scores"],
            group["messages"],
            strict=True,
        ):
            assert len(tokens) == len(masks) == len(logprobs)
            n_assistant = sum(1 for m in messages if m["role"] == "assistant")
            runs = _runs(masks)
            assert len(runs) == n_assistant  # one trained run per model turn, prompts and tool output masked
            for start, end in runs:
                for i in range(start, end):
                    assert masks[i] == tokens[i]
                    # the sampler's logprob for exactly this token at this output position
                    assert logprobs[i] == pytest.approx(scripted_logprob(tokens[i], i - start))
            assert all(lp == 1.0 for lp, m in zip(logprobs, masks, strict=True) if m == -100)
            trained = assistant_text_of(tokenizer, tokens, masks)
            assert trained.count("<|im_end|>") == n_assistant
            task = tasks[next(m["content"] for m in messages if m["role"] == "user")]
            assert score == (1.0 if expected_success(task, messages) else 0.0), (task.id, messages)
            scores.append(score)
    assert 0.0 in scores and 1.0 in scores
    html = out.with_suffix(".html")
    page = html.read_text()  # hermes_env.html_view: one section per group, task ids in the headers
    assert page.count('<section class="group"') == 5 and 'class="call"' in page
    for group in groups:
        task_id = tasks[group["messages"][0][1]["content"]].id
        assert [info["task_id"] for info in group["rollout_info"]] == [task_id] * 4
        assert f"task <code>{task_id}</code>" in page
    for label in ("groups written", "mean reward", "mean turns", "tool calls / rollout", "trained tokens"):
        assert label in proc.stdout
    assert "5/5" in proc.stderr and "mean reward" in proc.stderr  # the progress bar
