"""Task rows that name a container image: validated at setup, skipped (saying so) on backends without images, and a
clear failed rollout if such a task still reaches one."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from env_fixtures import completion
from hermes_env.containers import ImageSpec
from hermes_env.environments.terminal_tasks.env import TASKS_PATH, TerminalTasksEnv
from hermes_env.errors import DatasetError, EnvSetupError


def write_rows(path: Path, rows: list[dict[str, Any]]) -> str:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


async def test_tasks_needing_an_image_are_skipped_on_a_backend_without_images(make_env: Any, caplog: Any) -> None:
    env = make_env(env_cls=TerminalTasksEnv, dataset_name=str(TASKS_PATH))
    with caplog.at_level(logging.WARNING):
        await env.setup()
    shipped = [json.loads(line) for line in TASKS_PATH.read_text().splitlines()]
    with_image = {t["id"] for t in shipped if "dockerfile" in t or "image" in t}
    assert len(with_image) >= 5
    assert {t["id"] for t in env.tasks} == {t["id"] for t in shipped} - with_image
    assert f"skipping {len(with_image)} of {len(shipped)} tasks that need their own container image" in caplog.text
    assert "terminal_backend docker" in caplog.text


async def test_a_dockerfile_is_relative_to_its_task_file(make_env: Any, tmp_path: Path) -> None:
    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "Dockerfile").write_text("FROM scratch\n")
    rows = [{"id": "a", "prompt": "p", "check": "true", "dockerfile": "img/Dockerfile"}]
    env = make_env(env_cls=TerminalTasksEnv, dataset_name=write_rows(tmp_path / "t.jsonl", rows))
    assert env.task_image(rows[0]) == ImageSpec(dockerfile=tmp_path / "img" / "Dockerfile")
    assert env.task_image({"id": "b", "image": "debian:bookworm"}) == ImageSpec(image="debian:bookworm")
    assert env.task_image({"id": "c"}) is None


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"dockerfile": "missing/Dockerfile"}, r"task 'a': dockerfile 'missing/Dockerfile' does not exist"),
        ({"image": "x", "dockerfile": "y"}, r"task 'a' names both image and dockerfile"),
        ({"image": ""}, r"task 'a': image must be a non-empty image name"),
    ],
)
async def test_bad_image_fields_are_refused_at_setup(make_env: Any, tmp_path: Path, row: dict, message: str) -> None:
    rows = [{"id": "a", "prompt": "p", "check": "true", **row}]
    env = make_env(env_cls=TerminalTasksEnv, dataset_name=write_rows(tmp_path / "t.jsonl", rows))
    with pytest.raises(DatasetError, match=message):
        await env.setup()


async def test_only_image_tasks_on_a_backend_without_images_is_a_clear_error(make_env: Any, tmp_path: Path) -> None:
    rows = [{"id": "a", "prompt": "p", "check": "true", "image": "debian:bookworm"}]
    env = make_env(env_cls=TerminalTasksEnv, dataset_name=write_rows(tmp_path / "t.jsonl", rows))
    with pytest.raises(DatasetError, match="every terminal_tasks task needs a container image.*backend docker"):
        await env.setup()


async def test_an_image_task_reaching_a_backend_without_images_fails_its_rollout(make_env: Any) -> None:
    env = make_env(lambda messages, call: completion("done"), env_cls=TerminalTasksEnv, group_size=2)
    await env.setup()
    item = {"id": "x", "prompt": "p", "check": "true", "image": "debian:bookworm"}
    group, _ = await env.collect_trajectories(item)
    assert group is None and env.rollout_stats.groups_dropped == 1


@pytest.mark.containers
async def test_a_command_killed_for_memory_drops_its_group_on_docker(make_env: Any) -> None:
    hog = completion("<think>go</think>", [("terminal", {"command": "python3 -c 'x = bytearray(600 * 1024 * 1024)'"})])
    env = make_env(
        lambda messages, call: hog if messages[-1]["role"] == "user" else completion("done"),
        env_cls=TerminalTasksEnv,
        group_size=2,
        terminal_backend="docker",
        terminal_backend_options={"memory_bytes": "256MiB"},
    )
    await env.setup()
    try:
        group, _ = await env.collect_trajectories({"id": "hog", "prompt": "use memory", "check": "true"})
    finally:
        await env.backend.aclose()
    assert group is None and env.rollout_stats.dropped_by_cause == {"sandbox_failed": 1}


async def test_a_missing_engine_stops_the_run_at_start_saying_what_to_install(make_env: Any) -> None:
    env = make_env(
        env_cls=TerminalTasksEnv, terminal_backend="docker", terminal_backend_options={"engine": "no-such-engine"}
    )
    with pytest.raises(EnvSetupError) as info:
        await env.preflight()
    message = str(info.value)
    assert "terminal backend 'docker' cannot be used" in message and "'no-such-engine' is not installed" in message
    assert "podman" in message
