"""The README's example environment runs as written: its own commands (scripted vLLM ``--turns``, ``process`` with the
defaults), and in Phase 1 against a scripted OpenAI server."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from e2e_helpers import REPO, read_groups
from hermes_env.backends.bwrap import bwrap_problem
from hermes_env.resources import qwen3_tokenizer
from hermes_env.testing.scripted_openai import ScriptedOpenAIServer
from hermes_env.testing.scripted_vllm import ScriptedVLLMServer, TurnScript

pytestmark = pytest.mark.e2e


def _files_policy(messages: list[dict[str, Any]], tools: Any) -> str:
    """Creates the asked number of files, except for 3, where it creates one too many."""
    match = re.search(r"exactly (\d+)", str(messages[-1].get("content")))
    if messages[-1]["role"] != "user" or match is None:
        return "Done."
    n = int(match.group(1))
    names = " ".join(f"out/f{i}" for i in range(1, n + 1 + (n == 3)))
    call = {"name": "terminal", "arguments": {"command": f"mkdir -p out && touch {names}"}}
    return f"<tool_call>\n{json.dumps(call)}\n</tool_call>"


def test_readme_example_environment(tmp_path: Path) -> None:
    code = re.search(r"```python\n(.*?)```", (REPO / "README.md").read_text(), re.DOTALL)
    assert code is not None, "README has no python example"
    script = tmp_path / "count_files.py"
    script.write_text(code.group(1))
    out = tmp_path / "cf.jsonl"
    with ScriptedOpenAIServer(_files_policy) as server:
        proc = subprocess.run(
            [sys.executable, str(script), "process", "--openai.base_url", server.base_url,
             "--openai.server_type", "openai", "--env.total_steps", "4", "--env.group_size", "2",
             "--env.terminal_backend", "local", "--env.data_path_to_save_groups", str(out),
             "--env.process_concurrency", "1"],
            capture_output=True, text=True, timeout=240, cwd=tmp_path, env={**os.environ, "WANDB_MODE": "disabled"},
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    groups = read_groups(out)
    assert len(groups) == 4
    for group in groups:
        n = int(re.search(r"exactly (\d+)", group["messages"][0][0]["content"]).group(1))
        assert group["scores"] == [0.0, 0.0] if n == 3 else group["scores"] == [1.0, 1.0]


def test_readme_example_runs_as_written_against_the_scripted_turns(tmp_path: Path) -> None:
    readme = (REPO / "README.md").read_text()
    code = re.search(r"```python\n(.*?)```", readme, re.DOTALL)
    commands = re.search(
        r"```bash\n(echo '.*?' > replies\.json)\n(.*?)\n(.*?count_files\.py process.*?)\n```", readme, re.DOTALL
    )
    assert code is not None and commands is not None, "README lost the example or its commands"
    (tmp_path / "count_files.py").write_text(code.group(1))
    subprocess.run(["bash", "-c", commands.group(1)], cwd=tmp_path, check=True)
    assert "--turns replies.json" in commands.group(2)
    texts = json.loads((tmp_path / "replies.json").read_text())
    process = shlex.split(commands.group(3))
    assert process[:3] == [".venv/bin/python", "count_files.py", "process"]
    backend = "bwrap" if bwrap_problem() is None else "local"
    with ScriptedVLLMServer(qwen3_tokenizer(), TurnScript(texts)) as server:
        args = [a.replace("http://127.0.0.1:9000/v1", server.base_url) for a in process[3:]]
        args = ["local" if a == "bwrap" and backend == "local" else a for a in args]
        proc = subprocess.run(
            [sys.executable, "count_files.py", "process", *args],
            capture_output=True, text=True, timeout=240, cwd=tmp_path, env={**os.environ, "WANDB_MODE": "disabled"},
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    groups = read_groups(tmp_path / "data" / "count_files.jsonl")
    assert len(groups) == 8 and all(len(g["scores"]) == 4 for g in groups)  # the defaults the README states
    for group in groups:
        n = int(re.search(r"exactly (\d+)", group["messages"][0][0]["content"]).group(1))
        assert group["scores"] == [1.0 if n == 3 else 0.0] * 4
        assert all(i["reward"]["checks"][0]["command"] == "ls out | wc -l" for i in group["rollout_info"])
    assert (tmp_path / "data" / "count_files.html").is_file()
