"""terminal_tasks on the docker backend: image tasks pass only in their images, the others in the base image, and
the demo runs end to end leaving no container (also when an image fails to build or no engine exists)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hermes_env.backends import get_backend
from hermes_env.backends.docker import DockerBackend
from hermes_env.containers import ContainerEngine, ImageSpec
from hermes_env.env.dataset import load_rows
from hermes_env.environments.terminal_tasks.env import TASKS_PATH
from hermes_env.testing.policies import ScriptedTask, expected_success
from hermes_env.tool_context import ToolContext

REPO = Path(__file__).resolve().parents[2]
TASKS = load_rows(str(TASKS_PATH))
IMAGE_TASKS = [t for t in TASKS if "dockerfile" in t or "image" in t]
BASE_TASKS = [t for t in TASKS if t not in IMAGE_TASKS]


@pytest.fixture
async def docker() -> AsyncIterator[DockerBackend]:
    backend = get_backend("docker", memory_bytes="512MiB")
    assert isinstance(backend, DockerBackend)
    yield backend
    await backend.aclose()


async def _check(
    backend: DockerBackend, task: dict[str, Any], task_id: str, image: ImageSpec | None, *, solve: bool = True
) -> Any:
    """The task's check in a fresh container of ``image`` after its setup and (``solve``) its reference solution."""
    backend.use_image(task_id, image)
    try:
        for command in (task.get("setup"), task["solution"] if solve else None):
            if command:
                await backend.execute(task_id, command, 60)
        return await backend.execute(task_id, task["check"], 60)
    finally:
        await backend.cleanup(task_id)


def test_at_least_five_tasks_need_their_own_image() -> None:
    assert len(IMAGE_TASKS) >= 5
    for task in IMAGE_TASKS:
        spec = ImageSpec.from_item(task, TASKS_PATH.parent)
        assert spec is not None and spec.dockerfile is not None and spec.dockerfile.is_file()


@pytest.mark.parametrize("task", IMAGE_TASKS, ids=lambda t: t["id"])
async def test_an_image_task_passes_in_its_image_and_fails_in_the_base(docker: DockerBackend, task: dict) -> None:
    image = ImageSpec.from_item(task, TASKS_PATH.parent)
    untouched = await _check(docker, task, "untouched", image, solve=False)
    assert not untouched.ok, f"{task['id']}: the check passes without doing anything"
    own = await _check(docker, task, "own", image)
    assert own.ok, (task["id"], own)
    base = await _check(docker, task, "base", None)
    assert not base.ok, (task["id"], base)


async def test_every_other_task_passes_in_the_base_image(docker: DockerBackend) -> None:
    gate = asyncio.Semaphore(6)

    async def one(task: dict[str, Any]) -> tuple[str, Any]:
        async with gate:
            return task["id"], await _check(docker, task, task["id"], None)

    results = await asyncio.gather(*(one(t) for t in BASE_TASKS))
    failed = [(tid, r.output[-300:]) for tid, r in results if not r.ok]
    assert not failed and len(results) == len(BASE_TASKS) >= 40


async def test_the_reward_sees_the_rollouts_container_until_cleanup(docker: DockerBackend) -> None:
    ctx = ToolContext("rollout", docker)
    model = await docker.execute("rollout", "echo from-the-model > answer.txt; hostname > host.txt", 10)
    assert model.ok
    assert await ctx.read_text("answer.txt") == "from-the-model\n"
    check = await ctx.terminal("cat answer.txt host.txt")
    assert check.output == "from-the-model\nsandbox"
    cid = docker._containers["rollout"].cid
    await ctx.cleanup()
    assert docker.engine.run_sync("inspect", "--type", "container", cid, check=False).returncode != 0


def _run_demo(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The demo on docker; the CompletedProcess's ``args`` ends with the child's pid (to find its containers)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "hermes_env.environments.terminal_tasks", "demo", "--backend", "docker", *args],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "WANDB_MODE": "disabled", **(env or {})},
    )
    try:
        stdout, stderr = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return subprocess.CompletedProcess([*proc.args, str(proc.pid)], proc.returncode, stdout, stderr)


def _containers_of(engine: ContainerEngine, proc: subprocess.CompletedProcess[str]) -> list[str]:
    """Containers (any state) whose owner is the finished run ``proc``."""
    pid = proc.args[-1]
    return [cid for cid, owner in engine.labelled() if owner.split(":")[2:3] == [pid]]


def _task_file(tmp_path: Path, tasks: list[dict[str, Any]]) -> Path:
    """A task file elsewhere; recipes named by absolute path (they are relative to the file otherwise)."""
    path = tmp_path / "tasks.jsonl"
    rows = []
    for task in tasks:
        row = dict(task)
        if "dockerfile" in row:
            row["dockerfile"] = str((TASKS_PATH.parent / row["dockerfile"]).resolve())
        rows.append(json.dumps(row))
    path.write_text("\n".join(rows) + "\n")
    return path


def test_demo_on_docker_runs_end_to_end_and_leaves_no_container(engine: ContainerEngine, tmp_path: Path) -> None:
    tasks = [*IMAGE_TASKS[:3], *BASE_TASKS[:3]]
    out = tmp_path / "demo.jsonl"
    proc = _run_demo(
        tmp_path, "--groups", "6", "--group-size", "2", "--seed", "3", "--out", str(out),
        "--env.dataset_name", str(_task_file(tmp_path, tasks)),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    groups = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(groups) == 6
    by_prompt = {t["prompt"]: ScriptedTask(t["id"], t["prompt"], t["solution"]) for t in tasks}
    seen = set()
    for group in groups:
        for score, messages in zip(group["scores"], group["messages"], strict=True):
            task = by_prompt[next(m["content"] for m in messages if m["role"] == "user")]
            seen.add(task.id)
            # The reward ran the task's check in the rollout's own container (its image), where the model worked.
            assert score == (1.0 if expected_success(task, messages) else 0.0), (task.id, messages)
    assert seen == {t["id"] for t in tasks}
    assert re.search(r"groups dropped\s+0\n", proc.stdout), proc.stdout
    assert "skipping" not in proc.stderr
    assert _containers_of(engine, proc) == []


def test_a_broken_recipe_drops_its_groups_and_leaves_nothing(engine: ContainerEngine, tmp_path: Path) -> None:
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "Dockerfile").write_text("ARG HERMES_BASE_IMAGE\nFROM ${HERMES_BASE_IMAGE}\nRUN exit 9\n")
    broken = {**BASE_TASKS[0], "id": "broken_image", "dockerfile": str(tmp_path / "broken" / "Dockerfile")}
    out = tmp_path / "demo.jsonl"
    proc = _run_demo(
        tmp_path, "--groups", "2", "--group-size", "2", "--out", str(out),
        "--env.dataset_name", str(_task_file(tmp_path, [broken])),
    )  # fmt: skip
    text = proc.stdout + proc.stderr
    assert "failed to build" in text and "fix the Dockerfile" in text, text[-3000:]
    # Every group is dropped with the cause sandbox_failed, and the run stops after max_failed_groups_in_a_row (3).
    # Two groups are in flight at a time (--groups 2), so the one still running when the third drop stops the run
    # may be counted too: 3 or 4, depending on whether the last two finish in the same wakeup.
    assert re.search(r"groups written\s+0\n", proc.stdout), proc.stdout
    dropped = re.search(r"groups dropped\s+(\d+) \(sandbox_failed (\d+)\)", proc.stdout)
    assert dropped is not None and dropped[1] == dropped[2] and int(dropped[1]) in (3, 4), proc.stdout
    assert not out.exists() or out.read_text() == ""
    assert _containers_of(engine, proc) == []
