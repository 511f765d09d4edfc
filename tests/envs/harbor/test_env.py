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
from hermes_env.envs.harbor.scripted import scripted_rows
from hermes_env.envs.harbor.task import load_tasks
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
        [sys.executable, "-m", "hermes_env.envs.harbor", "demo", str(tasks_dir), "--groups", "3", "--group-size",
         "2", "--out", str(out), "--seed", "3"],
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
