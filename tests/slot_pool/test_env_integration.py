"""An example environment end to end on the sandbox pool: ``terminal_backend: sandbox``.

Runs the terminal_tasks ``demo`` (Phase 2, scripted vLLM policy, Qwen3 tokenizer) with the
tools in the pool, and checks that the rewards computed inside the pool's workspaces match
what the scripted policy should earn — the same as with the bwrap backend.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.e2e


def _demo(backend: str, out: Path) -> list[dict]:
    env = {**os.environ, "WANDB_MODE": "disabled"}
    cmd = [sys.executable, "-m", "hermes_env.environments.terminal_tasks", "demo", "--groups", "3", "--group-size", "4",
           "--backend", backend, "--out", str(out), "--seed", "7"]  # fmt: skip
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [json.loads(line) for line in out.read_text().splitlines()]


def test_terminal_tasks_on_the_sandbox_pool_scores_like_bwrap(tmp_path: Path) -> None:
    pytest.importorskip("hermes_env.environments.terminal_tasks")
    on_pool = _demo("sandbox", tmp_path / "pool.jsonl")
    on_bwrap = _demo("bwrap", tmp_path / "bwrap.jsonl")
    assert len(on_pool) == len(on_bwrap) == 3
    assert [g["scores"] for g in on_pool] == [g["scores"] for g in on_bwrap]
    assert any(s > 0 for g in on_pool for s in g["scores"])  # tools really ran and rewards were earned
