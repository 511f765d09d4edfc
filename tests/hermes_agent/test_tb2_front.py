"""hermes_env's own Terminal-Bench 2 environment at upstream's path: a tblite-style file
(upstream_style/environments/benchmarks/lite_bench, subclassing ``TerminalBench2EvalEnv`` and changing only its
defaults and name) ported as a single file, then ``evaluate`` on rows that ``export-tb2`` wrote from Harbor tasks of
this repo, Phase 1, against the replay policy sending each task's reference solution (the oracle's way). The pass
rate is the oracle's: count-words' solution is right, wrong-solution's is wrong."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from hermes_env.envs.harbor.scripted import oracle_command
from hermes_env.envs.harbor.task import load_tasks

pytestmark = [pytest.mark.containers, pytest.mark.e2e]

HERE = Path(__file__).parent
REPO = HERE.parents[1]
TASKS = REPO / "tests" / "envs" / "harbor" / "tasks"
LITE = HERE / "upstream_style" / "environments" / "benchmarks" / "lite_bench" / "lite_bench_env.py"
NAMES = ["count-words", "wrong-solution"]  # cheap images: python:3.13-slim-bookworm and debian:bookworm-slim


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_tblite_style_file_ported_alone_evaluates_exported_tasks_as_the_oracle_says(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO / "python"), "WANDB_MODE": "disabled"}
    ported = tmp_path / "lite_bench_env.py"
    port = subprocess.run([sys.executable, "-m", "hermes_env.port", str(LITE), "-o", str(ported)],
                          capture_output=True, text=True, env=env, timeout=60, check=False)  # fmt: skip
    assert port.returncode == 0, port.stderr
    assert "hermes_env.hermes_agent.environments.benchmarks.terminalbench_2.terminalbench2_env" in ported.read_text()

    rows = tmp_path / "rows"
    export = subprocess.run([sys.executable, "-m", "hermes_env.envs.harbor", "export-tb2", str(TASKS), str(rows),
                             *NAMES], capture_output=True, text=True, env=env, timeout=120, check=False)  # fmt: skip
    assert export.returncode == 0, export.stderr

    rules = [
        {"match": re.escape(task.instruction[:60]),
         "turns": [{"tool_calls": [{"name": "terminal", "arguments": {"command": oracle_command(task)}}]},
                   {"content": "Done."}]}
        for task in load_tasks(TASKS, NAMES)
    ]  # fmt: skip
    (tmp_path / "replay.json").write_text(json.dumps({"rules": rules}))
    port_no = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "hermes_env.testing.scripted_openai", "--port", str(port_no),
         "--policy", f"replay:{tmp_path / 'replay.json'}"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port_no}/v1"
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{url}/models", timeout=2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the scripted OpenAI server did not start"
                time.sleep(0.2)
        evals = tmp_path / "evals"
        run = subprocess.run(
            [sys.executable, str(ported), "evaluate", "--openai.base_url", url, "--openai.server_type", "openai",
             "--openai.tokenizer_name", "bundled:qwen3", "--env.tokenizer_name", "bundled:qwen3",
             "--env.terminal_backend", "docker", "--env.dataset_name", str(rows),
             "--env.data_dir_to_save_evals", str(evals)],
            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=900, check=False,
        )  # fmt: skip
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert run.returncode == 0, (run.stdout + run.stderr)[-4000:]
    metrics = json.loads((evals / "metrics.json").read_text())["results"]["all"]
    assert metrics["eval/pass_rate"] == 0.5 and metrics["eval/total_tasks"] == 2
    assert metrics["eval/pass_rate_file_operations"] == 1.0  # count-words' category, from its task.toml
    samples = [json.loads(line) for line in (evals / "samples.jsonl").read_text().splitlines()]
    verdicts = sorted((s["task_name"], s["passed"], s["reward"], s["error"], s["turns_used"]) for s in samples)
    assert verdicts == [("count-words", True, 1.0, None, 2), ("wrong-solution", False, 0.0, None, 2)]
    assert "Overall Pass Rate: 0.5000 (1/2)" in run.stdout
