"""The harbor environment's Phase-2 loop (``process``) with no model: the scripted policy sends each task's
solution as a terminal call (or a wrong command), each rollout runs in a container of the task's image, and the
reward is the task's own verifier."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hermes_env.environments.harbor.scripted import scripted_rows
from hermes_env.environments.harbor.task import load_tasks
from hermes_env.testing.policies import expected_success, task_from_row

pytestmark = pytest.mark.containers

TASKS = Path(__file__).parent / "tasks"
REPO = Path(__file__).resolve().parents[3]


def test_demo_scores_rollouts_with_the_tasks_verifiers(tmp_path: Path) -> None:
    tasks_dir = tmp_path / "tasks"
    tasks_dir.mkdir()
    for name in ("offline-note", "ubuntu-jq"):
        (tasks_dir / name).symlink_to(TASKS / name)
    out = tmp_path / "demo.jsonl"
    env = {**os.environ, "PYTHONPATH": str(REPO / "python")}
    proc = subprocess.run(
        [sys.executable, "-m", "hermes_env.environments.harbor", "demo", str(tasks_dir), "--groups", "3",
         "--group-size", "2", "--out", str(out), "--seed", "3"],
        capture_output=True, text=True, env=env, timeout=900, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "ubuntu-jq: not honoured here: cpus = 64 clamped" in proc.stderr
    rows = {row["prompt"]: task_from_row(row) for row in scripted_rows(load_tasks(tasks_dir))}
    groups = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(groups) == 3
    scores = []
    for group in groups:
        for score, messages in zip(group["scores"], group["messages"], strict=True):
            task = rows[next(m["content"] for m in messages if m["role"] == "user")]
            assert score == (1.0 if expected_success(task, messages) else 0.0), (task.id, messages)
            scores.append(score)
    assert 1.0 in scores


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "python"), "WANDB_MODE": "disabled"}
    return subprocess.run(
        [sys.executable, "-m", "hermes_env.environments.harbor", *args],
        capture_output=True, text=True, env=env, timeout=900, check=False, cwd=cwd,
    )  # fmt: skip


def test_process_phase1_and_evaluate_phase2(tmp_path: Path) -> None:
    from hermes_env.testing import qwen3_tokenizer, qwen3_tokenizer_dir
    from hermes_env.testing.policies import SolutionPolicy
    from hermes_env.testing.scripted_openai import ScriptedOpenAIServer
    from hermes_env.testing.scripted_vllm import ScriptedVLLMServer

    names = "offline-note,wrong-solution"
    rows = scripted_rows(load_tasks(TASKS, names.split(",")))
    always_solve = SolutionPolicy(rows, weights={"solve": 1.0})
    out = tmp_path / "groups.jsonl"
    with ScriptedOpenAIServer(always_solve.respond_to_messages) as server:
        proc = _run(
            "process", "--openai.base_url", server.base_url, "--openai.server_type", "openai",
            "--openai.model_name", "scripted-policy", "--env.tasks_dir", str(TASKS), "--env.task_names", names,
            "--env.total_steps", "2", "--env.group_size", "2", "--env.data_path_to_save_groups", str(out),
            cwd=tmp_path,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    groups = [json.loads(line) for line in out.read_text().splitlines()]
    by_task = {g["rollout_info"][0]["task_id"]: g["scores"] for g in groups}
    # The reference solution of offline-note passes its verifier; wrong-solution's does not.
    assert by_task == {"offline-note": [1.0, 1.0], "wrong-solution": [0.0, 0.0]}
    assert all(g.get("inference_logprobs") is None for g in groups)  # Phase 1: no token logprobs from the server

    evals = tmp_path / "evals"
    with ScriptedVLLMServer(qwen3_tokenizer(), always_solve.vllm_responder) as server:
        proc = _run(
            "evaluate", "--openai.base_url", server.base_url, "--openai.server_type", "vllm",
            "--openai.tokenizer_name", str(qwen3_tokenizer_dir()), "--env.tasks_dir", str(TASKS),
            "--env.task_names", names, "--env.data_dir_to_save_evals", str(evals), cwd=tmp_path,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    samples = {s["id"]: s for s in (json.loads(x) for x in (evals / "samples.jsonl").read_text().splitlines())}
    assert {k: v["score"] for k, v in samples.items()} == {"offline-note": 1.0, "wrong-solution": 0.0}
    metrics = json.loads((evals / "metrics.json").read_text())["results"]["all"]
    assert metrics["eval/accuracy"] == 0.5
