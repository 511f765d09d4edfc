"""hermes_env's own Terminal-Bench 2 environment at upstream's path: a tblite-style file
(upstream_style/environments/benchmarks/lite_bench, subclassing ``TerminalBench2EvalEnv`` and changing only its
defaults and name) ported as a single file, then ``evaluate`` on rows that ``export-tb2`` wrote from Harbor tasks of
this repo, Phase 1, against the replay policy sending each task's reference solution (the oracle's way). The pass
rate is the oracle's: count-words' solution is right, wrong-solution's is wrong. On bwrap (no images), Phase 2:
tasks run in the sandbox and their verifiers as upstream runs them."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from hermes_env.environments.harbor.scripted import oracle_command
from hermes_env.environments.harbor.task import load_tasks
from hermes_env.isolation import bwrap_problem

pytestmark = pytest.mark.e2e

HERE = Path(__file__).parent
REPO = HERE.parents[1]
TASKS = REPO / "tests" / "environments" / "harbor" / "tasks"
LITE = HERE / "upstream_style" / "environments" / "benchmarks" / "lite_bench" / "lite_bench_env.py"
NAMES = ["count-words", "wrong-solution"]  # cheap images: python:3.13-slim-bookworm and debian:bookworm-slim
ENV = {**os.environ, "PYTHONPATH": str(REPO / "python"), "WANDB_MODE": "disabled"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _shell(command: str) -> list[dict[str, Any]]:
    return [{"tool_calls": [{"name": "terminal", "arguments": {"command": command}}]}, {"content": "Done."}]


def _port_lite(tmp_path: Path) -> Path:
    ported = tmp_path / "lite_bench_env.py"
    port = subprocess.run([sys.executable, "-m", "hermes_env.port", str(LITE), "-o", str(ported)],
                          capture_output=True, text=True, env=ENV, timeout=60, check=False)  # fmt: skip
    assert port.returncode == 0, port.stderr
    assert "hermes_env.hermes_agent.environments.benchmarks.terminalbench_2.terminalbench2_env" in ported.read_text()
    return ported


def _export(tasks: Path, rows: Path, names: list[str]) -> None:
    export = subprocess.run([sys.executable, "-m", "hermes_env.environments.harbor", "export-tb2", str(tasks),
                             str(rows), *names],
                            capture_output=True, text=True, env=ENV, timeout=120, check=False)  # fmt: skip
    assert export.returncode == 0, export.stderr


def _evaluate(tmp_path: Path, env_file: Path, rules: list[dict[str, Any]], phase: str, *args: str) -> dict[str, Any]:
    """``python ENV evaluate`` against the scripted server of ``phase`` answering from ``rules``; metrics, samples
    (by task name) and stdout."""
    (tmp_path / "replay.json").write_text(json.dumps({"rules": rules}))
    kind = {"openai": "scripted_openai", "vllm": "scripted_vllm"}[phase]
    port_no = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", f"hermes_env.testing.{kind}", "--port", str(port_no),
         "--policy", f"replay:{tmp_path / 'replay.json'}"],
        env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port_no}/v1"
        probe = f"{url}/models" if phase == "openai" else f"http://127.0.0.1:{port_no}/health"
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(probe, timeout=2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, f"the scripted {phase} server did not start"
                time.sleep(0.2)
        evals = tmp_path / "evals"
        run = subprocess.run(
            [sys.executable, str(env_file), "evaluate", "--openai.base_url", url, "--openai.server_type", phase,
             "--openai.tokenizer_name", "bundled:qwen3", "--env.tokenizer_name", "bundled:qwen3",
             "--env.data_dir_to_save_evals", str(evals), *args],
            capture_output=True, text=True, env=ENV, cwd=tmp_path, timeout=900, check=False,
        )  # fmt: skip
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert run.returncode == 0, (run.stdout + run.stderr)[-4000:]
    samples = [json.loads(line) for line in (evals / "samples.jsonl").read_text().splitlines()]
    return {
        "metrics": json.loads((evals / "metrics.json").read_text())["results"]["all"],
        "samples": {s["task_name"]: s for s in samples},
        "stdout": run.stdout,
        "stderr": run.stderr,
    }


@pytest.mark.containers
def test_tblite_style_file_ported_alone_evaluates_exported_tasks_as_the_oracle_says(tmp_path: Path) -> None:
    ported = _port_lite(tmp_path)
    _export(TASKS, tmp_path / "rows", NAMES)
    rules = [{"match": re.escape(t.instruction[:60]), "turns": _shell(oracle_command(t))}
             for t in load_tasks(TASKS, NAMES)]  # fmt: skip
    got = _evaluate(tmp_path, ported, rules, "openai",
                    "--env.terminal_backend", "docker", "--env.dataset_name", str(tmp_path / "rows"))  # fmt: skip
    metrics = got["metrics"]
    assert metrics["eval/pass_rate"] == 0.5 and metrics["eval/total_tasks"] == 2
    assert metrics["eval/pass_rate_file_operations"] == 1.0  # count-words' category, from its task.toml
    verdicts = sorted((s["task_name"], s["passed"], s["reward"], s["error"], s["turns_used"])
                      for s in got["samples"].values())  # fmt: skip
    assert verdicts == [("count-words", True, 1.0, None, 2), ("wrong-solution", False, 0.0, None, 2)]
    assert "Overall Pass Rate: 0.5000 (1/2)" in got["stdout"]


def _task(root: Path, name: str, instruction: str, test_sh: str) -> None:
    (root / name / "environment").mkdir(parents=True)
    (root / name / "tests").mkdir()
    (root / name / "environment" / "Dockerfile").write_text("FROM debian:bookworm-slim\nWORKDIR /app\n")
    (root / name / "instruction.md").write_text(instruction + "\n")
    (root / name / "task.toml").write_text('[metadata]\ncategory = "files"\n')
    (root / name / "tests" / "test.sh").write_text("#!/bin/bash\n" + test_sh + "\n")


@pytest.mark.skipif(bwrap_problem() is not None, reason=f"bubblewrap unusable: {bwrap_problem()}")
def test_on_bwrap_tasks_run_in_the_sandbox_and_verify_as_upstream_does_phase_2(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    _task(
        tasks,
        "status-word",
        "Write the word ready into /app/status.txt.",
        'if [ "$(cat /app/status.txt)" = ready ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt',
    )
    # no reward file: the reward is test.sh's exit status, as upstream falls back to it
    _task(tasks, "done-file", "Create the empty file /app/done.txt.", "test -f /app/done.txt")
    _task(
        tasks,
        "wrong-word",
        "Write the word yes into /app/answer.txt.",
        'if [ "$(cat /app/answer.txt)" = yes ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt',
    )
    _export(tasks, tmp_path / "rows", [])
    rules = [
        {"match": "word ready", "turns": _shell("mkdir -p /app && echo ready > /app/status.txt")},
        {"match": "done\\.txt", "turns": _shell("mkdir -p /app && touch /app/done.txt")},
        {"match": "word yes", "turns": _shell("mkdir -p /app && echo no > /app/answer.txt")},
    ]
    got = _evaluate(tmp_path, _port_lite(tmp_path), rules, "vllm",
                    "--env.terminal_backend", "bwrap", "--env.dataset_name", str(tmp_path / "rows"))  # fmt: skip
    assert {name: s["reward"] for name, s in got["samples"].items()} == {
        "done-file": 1.0, "status-word": 1.0, "wrong-word": 0.0,
    }  # fmt: skip
    assert got["metrics"]["eval/pass_rate_files"] == 2 / 3
    assert "runs no images" in got["stderr"]


BENCH = HERE / "upstream_style" / "environments" / "benchmarks" / "bench_tasks" / "bench_tasks_env.py"


@pytest.mark.containers
def test_upstream_style_tb2_file_verifies_in_upstream_images_offline_as_the_oracle_does(tmp_path: Path) -> None:
    """A TB2-style file of its own (register_task_env_overrides with the Dockerfile path, then ``upload_dir('/tests')``,
    ``bash /tests/test.sh``, ``download_dir('/logs/verifier')`` through its ToolContext): each image is built from
    its upstream ``FROM`` on local bases, test.sh fetches uv and pytest offline from the read-only toolbox, and
    the per-task rewards are the oracle's. tamper-verifier's "solution" rewrites pytest, plants uvx and
    ``$HOME/.local/bin/env`` and writes reward.txt ahead: it gains nothing, as under the oracle."""
    names = ["count-words", "wrong-solution", "tamper-verifier"]
    tasks = tmp_path / "tasks"
    for name in names:
        shutil.copytree(TASKS / name, tasks / name)
    # tamper-verifier asks what count-words asks; a first line of its own lets the replay tell the two apart
    prompt = tasks / "tamper-verifier" / "instruction.md"
    prompt.write_text("(the tamper-verifier task)\n" + prompt.read_text())
    ported = tmp_path / "bench_tasks_env.py"
    port = subprocess.run([sys.executable, "-m", "hermes_env.port", str(BENCH), "-o", str(ported)],
                          capture_output=True, text=True, env=ENV, timeout=60, check=False)  # fmt: skip
    assert port.returncode == 0, port.stderr
    _export(tasks, tmp_path / "rows", names)
    oracle = subprocess.run([sys.executable, "-m", "hermes_env.environments.harbor", "oracle", str(tasks), *names,
                             "--out", str(tmp_path / "oracle")],
                            capture_output=True, text=True, env=ENV, timeout=900, check=False)  # fmt: skip
    by_oracle = {row["task"]: row["reward_after"] for row in json.loads((tmp_path / "oracle.json").read_text())}
    assert by_oracle == {"count-words": 1.0, "wrong-solution": 0.0, "tamper-verifier": 0.0}, oracle.stdout
    # the first matching rule answers: tamper-verifier's prompt holds count-words' whole prompt
    rules = [{"match": re.escape(t.instruction[:60]), "turns": _shell(oracle_command(t))}
             for t in sorted(load_tasks(tasks, names), key=lambda t: t.name != "tamper-verifier")]  # fmt: skip
    results = tmp_path / "results.jsonl"
    _evaluate(tmp_path, ported, rules, "openai", "--env.terminal_backend", "docker",
              "--env.dataset_name", str(tmp_path / "rows"), "--env.test_timeout", "600",
              "--env.force_build", "true", "--env.results_file", str(results))  # fmt: skip
    got = {r["task_name"]: r for r in map(json.loads, results.read_text().splitlines())}
    assert {name: (r["reward"], r["error"]) for name, r in got.items()} == {
        name: (reward, None) for name, reward in by_oracle.items()
    }
