"""E2E: an environment driven by a replay file through both stand-ins' command lines (Phase 1 and Phase 2)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from e2e_helpers import REPO, TASKS, free_port, read_groups, run_env, write_tasks

pytestmark = pytest.mark.e2e

# hello and count solved, upper answered wrongly: rewards 1, 1, 0 as the env's own check gives them.
REPLAY = {
    "rules": [
        {
            "match": r"hello\.txt",
            "turns": [
                {
                    "content": "I'll write it.",
                    "tool_calls": [{"name": "terminal", "arguments": {"command": TASKS[0]["solution"]}}],
                },
                {"content": "Done."},
            ],
        },
        {
            "match": r"^Count the lines",
            "turns": [
                {"tool_calls": [{"name": "terminal", "arguments": {"command": "ls"}}]},
                {"tool_calls": [{"name": "write_file", "arguments": {"path": "count.txt", "content": "17\n"}}]},
                {"content": "Wrote 17."},
            ],
        },
    ],
    "default": [
        {"tool_calls": [{"name": "terminal", "arguments": {"command": "cp words.txt upper.txt"}}]},
        {"content": "Copied."},
    ],
}
EXPECTED = {"hello": 1.0, "count": 1.0, "upper": 0.0}


def _serve(module: str, port: int, replay: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", module, "--port", str(port), "--policy", f"replay:{replay}"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO, env=dict(os.environ),
    )  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline()  # the start-up line, once it listens
    if f"127.0.0.1:{port}" not in line:
        proc.kill()
        raise AssertionError(f"{module} did not start: {line}{proc.communicate()[0]}")
    return proc


@pytest.mark.parametrize(
    ("module", "server_args"),
    [
        ("hermes_env.testing.scripted_openai", ["--openai.server_type", "openai"]),
        (
            "hermes_env.testing.scripted_vllm",
            ["--openai.server_type", "vllm", "--openai.tokenizer_name", "bundled:qwen3",
             "--env.tokenizer_name", "bundled:qwen3"],
        ),
    ],
)  # fmt: skip
def test_process_runs_on_replayed_turns(tmp_path: Path, module: str, server_args: list[str]) -> None:
    replay = tmp_path / "turns.json"
    replay.write_text(json.dumps(REPLAY))
    tasks = write_tasks(tmp_path / "tasks.jsonl")
    out = tmp_path / "groups.jsonl"
    port = free_port()
    server = _serve(module, port, replay)
    try:
        proc = run_env(
            "hermes_env.environments.terminal_tasks",
            "process",
            "--openai.base_url", f"http://127.0.0.1:{port}/v1",
            "--openai.model_name", "scripted",
            *server_args,
            "--env.dataset_name", str(tasks),
            "--env.terminal_backend", "local",
            "--env.total_steps", "3",
            "--env.group_size", "2",
            "--env.data_path_to_save_groups", str(out),
        )  # fmt: skip
    finally:
        server.terminate()
        server.communicate(timeout=30)
    assert proc.returncode == 0, proc.stderr[-3000:]
    groups = read_groups(out)
    assert len(groups) == 3
    by_prompt = {t["prompt"]: t["id"] for t in TASKS}
    seen = set()
    for group in groups:
        for score, messages in zip(group["scores"], group["messages"], strict=True):
            task = by_prompt[next(m["content"] for m in messages if m["role"] == "user")]
            seen.add(task)
            assert score == EXPECTED[task], (task, messages)
            calls = [c["function"]["name"] for m in messages for c in m.get("tool_calls") or []]
            assert calls == {"hello": ["terminal"], "count": ["terminal", "write_file"], "upper": ["terminal"]}[task]
            assert messages[-1]["role"] == "assistant" and not messages[-1].get("tool_calls")
    assert seen == set(EXPECTED)
