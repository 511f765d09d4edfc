"""E2E: swe_lite (repository copied in, hidden tests decide the reward) and bench_eval (evaluate writes
metrics.json and samples.jsonl), both against the scripted vLLM ``/generate`` policy in Phase 2."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from e2e_helpers import TASKS, read_groups, run_env, write_tasks
from hermes_env.backends.bwrap import bwrap_problem
from hermes_env.env.dataset import load_rows
from hermes_env.environments.bench_eval.env import QUESTIONS_PATH
from hermes_env.environments.swe_lite.env import TASKS_PATH as SWE_TASKS
from hermes_env.testing import qwen3_tokenizer, qwen3_tokenizer_dir
from hermes_env.testing.policies import SolutionPolicy, expected_success, task_from_row
from hermes_env.testing.scripted_vllm import ScriptedVLLMServer

pytestmark = pytest.mark.e2e

BACKEND = "bwrap" if bwrap_problem() is None else "local"


def test_swe_lite_process_rewards_follow_the_hidden_tests(tmp_path: Path) -> None:
    rows = load_rows(str(SWE_TASKS))
    out = tmp_path / "swe.jsonl"
    policy = SolutionPolicy(rows, seed=2)
    with ScriptedVLLMServer(qwen3_tokenizer(), policy.vllm_responder) as server:
        proc = run_env(
            "hermes_env.environments.swe_lite", "process",
            "--openai.base_url", server.base_url, "--openai.server_type", "vllm",
            "--openai.tokenizer_name", str(qwen3_tokenizer_dir()),
            "--env.terminal_backend", BACKEND, "--env.total_steps", "4", "--env.group_size", "4",
            "--env.data_path_to_save_groups", str(out),
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    groups = read_groups(out)
    assert len(groups) == 4
    tasks = {t["prompt"]: task_from_row(t) for t in rows}
    scores = []
    for group in groups:
        for score, messages in zip(group["scores"], group["messages"], strict=True):
            task = tasks[next(m["content"] for m in messages if m["role"] == "user")]
            # The reference patch makes the hidden tests pass; the scripted wrong attempts do not.
            assert score == (1.0 if expected_success(task, messages) else 0.0), task.id
            scores.append(score)
    assert 0.0 in scores and 1.0 in scores


def test_bench_eval_evaluate_writes_metrics_and_samples(tmp_path: Path) -> None:
    rows = load_rows(str(QUESTIONS_PATH), prompt_field="question")
    policy = SolutionPolicy(rows, seed=4, answer_from_output=True)
    evals = tmp_path / "evals"
    with ScriptedVLLMServer(qwen3_tokenizer(), policy.vllm_responder) as server:
        proc = run_env(
            "hermes_env.environments.bench_eval", "evaluate",
            "--openai.base_url", server.base_url, "--openai.server_type", "vllm",
            "--openai.tokenizer_name", str(qwen3_tokenizer_dir()),
            "--env.terminal_backend", BACKEND, "--env.data_dir_to_save_evals", str(evals),
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    metrics = json.loads((evals / "metrics.json").read_text())["results"]["all"]
    samples = [json.loads(line) for line in (evals / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == len(rows) and metrics["eval/items"] == len(rows)
    by_id = {r["id"]: r for r in rows}
    tasks = {r["id"]: task_from_row(r) for r in rows}
    for sample in samples:
        assert sample["error"] is None
        solved = expected_success(tasks[sample["id"]], sample["messages"])
        answered = sample["messages"][-1]["content"]
        # A run of the reference command answers correctly; anything else scores 0.
        assert sample["score"] == (1.0 if solved else 0.0), (sample["id"], answered, by_id[sample["id"]]["answer"])
    accuracy = sum(s["score"] for s in samples) / len(samples)
    assert metrics["eval/accuracy"] == pytest.approx(accuracy) and 0.0 < accuracy < 1.0
    assert any(key.startswith("eval/accuracy/") for key in metrics)
    # The results are also printed, with where they were saved.
    assert re.search(rf"eval/accuracy +{metrics['eval/accuracy']:.4g}\n", proc.stdout), proc.stdout
    assert f"saved: {evals / 'metrics.json'}" in proc.stdout


def test_scripted_evaluate_without_an_eval_dir_prints_the_results(tmp_path: Path) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl")
    policy = SolutionPolicy(TASKS, seed=4)
    with ScriptedVLLMServer(qwen3_tokenizer(), policy.vllm_responder) as server:
        proc = run_env(
            "hermes_env.environments.terminal_tasks", "evaluate", "--env.dataset_name", str(tasks),
            "--openai.base_url", server.base_url, "--openai.server_type", "vllm",
            "--env.terminal_backend", BACKEND, cwd=tmp_path,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert re.search(r"eval/accuracy +[0-9.]+\n", proc.stdout) and re.search(r"eval/items +3\n", proc.stdout)
    assert "not saved: pass --env.data_dir_to_save_evals DIR" in proc.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tasks.jsonl"]  # nothing written


def test_bench_eval_is_evaluation_only() -> None:
    proc = run_env("hermes_env.environments.bench_eval", "process", "--env.terminal_backend", "local", timeout=120)
    assert proc.returncode != 0 and "bench_eval is evaluation-only" in proc.stderr
