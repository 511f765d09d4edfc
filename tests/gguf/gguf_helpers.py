"""Shared by the real-model tests: running a hermes_env command the way a user does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def run_module(module: str, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``python -m <module> <args>`` from the repository root, wandb off, output captured."""
    env = {**os.environ, "WANDB_MODE": "disabled", "PYTHONUNBUFFERED": "1"}
    return subprocess.run(
        [sys.executable, "-m", module, *args], capture_output=True, text=True, timeout=timeout, env=env, cwd=REPO
    )
