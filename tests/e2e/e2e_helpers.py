"""Shared pieces of the end-to-end tests: a small task file, running an env's CLI, reading its jsonl."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]

# Small tasks in the terminal_tasks format; checks fail in an empty workspace.
TASKS = [
    {
        "id": "hello",
        "prompt": "Create a file hello.txt that contains exactly the line: hi",
        "setup": "",
        "check": "grep -qx hi hello.txt",
        "solution": "echo hi > hello.txt",
    },
    {
        "id": "count",
        "prompt": "Count the lines of data.txt and write the number to count.txt.",
        "setup": "seq 1 17 > data.txt",
        "check": 'test "$(tr -d " \\n" < count.txt)" = 17',
        "solution": "wc -l < data.txt > count.txt",
    },
    {
        "id": "upper",
        "prompt": "Write the contents of words.txt in upper case to upper.txt.",
        "setup": "printf 'alpha\\nbeta\\n' > words.txt",
        "check": 'test "$(cat upper.txt)" = "$(printf \'ALPHA\\nBETA\')"',
        "solution": "tr a-z A-Z < words.txt > upper.txt",
    },
]


def write_tasks(path: Path, tasks: list[dict[str, Any]] = TASKS) -> Path:
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_env(module: str, *args: str, timeout: float = 240, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m <module> <args>`` with wandb off; output captured."""
    env = {**os.environ, "WANDB_MODE": "disabled", "PYTHONUNBUFFERED": "1"}
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=cwd or REPO,
        check=False,
    )


def read_groups(path: Path) -> list[dict[str, Any]]:
    """Every line must be a complete JSON group (a torn line fails here)."""
    text = path.read_text()
    assert text == "" or text.endswith("\n"), "jsonl ends with a torn line"
    return [json.loads(line) for line in text.splitlines()]


def assistant_text_of(tokenizer: Any, tokens: list[int], masks: list[int]) -> str:
    return tokenizer.decode([t for t, m in zip(tokens, masks, strict=True) if m != -100])
