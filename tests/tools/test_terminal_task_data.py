"""The shipped terminal_tasks data: every task's check fails on the untouched workspace and passes after its
reference solution (the shell command, and the file-tool calls where given), inside the bwrap backend. Tasks that
name a container image of their own are checked in it by tests/containers/test_terminal_tasks_docker.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hermes_env.backends.bwrap import BwrapBackend
from hermes_env.tools import REGISTRY, ToolCallContext

TASKS_PATH = (
    Path(__file__).resolve().parents[2] / "python" / "hermes_env" / "environments" / "terminal_tasks" / "tasks.jsonl"
)
TASKS = [json.loads(line) for line in TASKS_PATH.read_text(encoding="utf-8").splitlines() if line.strip()]
HOST_TASKS = [t for t in TASKS if "dockerfile" not in t and "image" not in t]


def test_task_file_shape() -> None:
    assert len(TASKS) >= 36
    ids = [t["id"] for t in TASKS]
    assert len(ids) == len(set(ids))
    for task in TASKS:
        assert set(task) >= {"id", "prompt", "setup", "check", "solution"}, task["id"]
        assert isinstance(task["setup"], str) and isinstance(task["check"], str) and task["check"]
        assert isinstance(task["solution"], str) and task["solution"], task["id"]
        for call in task.get("solution_tool_calls", []):
            REGISTRY.get(call["name"]).validate(call["arguments"])


async def _setup(b: BwrapBackend, task_id: str, task: dict[str, Any]) -> None:
    if task["setup"]:
        res = await b.execute(task_id, task["setup"], 30)
        assert res.ok, f"setup of {task['id']} failed: {res.output}"


@pytest.mark.parametrize("task", HOST_TASKS, ids=[t["id"] for t in HOST_TASKS])
async def test_check_fails_untouched_and_passes_after_solution(bwrap: BwrapBackend, task: dict[str, Any]) -> None:
    await _setup(bwrap, "untouched", task)
    res = await bwrap.execute("untouched", task["check"], 30)
    assert not res.ok, f"{task['id']}: the check passes without doing anything"

    await _setup(bwrap, "solved", task)
    ctx = ToolCallContext("solved", bwrap, timeout=30)
    out = json.loads(await REGISTRY.dispatch("terminal", {"command": task["solution"]}, ctx))
    assert out["exit_code"] == 0, f"{task['id']}: solution failed: {out}"
    res = await bwrap.execute("solved", task["check"], 30)
    assert res.ok, f"{task['id']}: check fails after the solution: {res.output}"


TOOL_TASKS = [t for t in TASKS if t.get("solution_tool_calls")]


@pytest.mark.parametrize("task", TOOL_TASKS, ids=[t["id"] for t in TOOL_TASKS])
async def test_file_tool_solutions_pass(bwrap: BwrapBackend, task: dict[str, Any]) -> None:
    await _setup(bwrap, "tools", task)
    ctx = ToolCallContext("tools", bwrap, timeout=30)
    for call in task["solution_tool_calls"]:
        out = await REGISTRY.dispatch(call["name"], call["arguments"], ctx)
        assert out.error is None, f"{task['id']}: {call['name']} failed: {out}"
    if task["id"] == "insert_shebang":  # the file tools cannot chmod; the shell does that part
        await REGISTRY.dispatch("terminal", {"command": "chmod +x tool.py"}, ctx)
    res = await bwrap.execute("tools", task["check"], 30)
    assert res.ok, f"{task['id']}: check fails after the file-tool solution: {res.output}"
