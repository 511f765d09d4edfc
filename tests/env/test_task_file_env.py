"""TaskFileEnv, the base of the example environments: row validation, seeded cycling, the setup command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from env_fixtures import completion
from hermes_env.environments.swe_lite.env import SweLiteEnv
from hermes_env.environments.terminal_tasks.env import TerminalTasksEnv
from hermes_env.errors import DatasetError


def write_rows(path: Path, rows: list[dict[str, Any]]) -> str:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


async def test_a_row_without_a_required_field_names_it(make_env: Any, tmp_path: Path) -> None:
    tasks = write_rows(tmp_path / "t.jsonl", [{"id": "a", "prompt": "p", "check": "true"}, {"id": "b", "prompt": "p"}])
    env = make_env(env_cls=TerminalTasksEnv, dataset_name=tasks)
    with pytest.raises(DatasetError, match=r"terminal_tasks task 'b' in .*t\.jsonl lacks the field\(s\) \['check'\]"):
        await env.setup()


async def test_swe_lite_checks_that_the_repository_folders_exist(make_env: Any, tmp_path: Path) -> None:
    row = {"id": "x", "prompt": "fix", "repo": "nope/repo", "hidden_tests": "nope/tests", "test_command": "true"}
    env = make_env(env_cls=SweLiteEnv, dataset_name=write_rows(tmp_path / "t.jsonl", [row]), tasks_root=str(tmp_path))
    with pytest.raises(DatasetError, match=r"swe_lite task 'x': repo folder .*nope/repo does not exist"):
        await env.setup()


async def test_items_cycle_through_every_task_in_a_seeded_order(make_env: Any, tmp_path: Path) -> None:
    rows = [{"id": str(i), "prompt": f"task {i}", "check": "true"} for i in range(7)]
    tasks = write_rows(tmp_path / "t.jsonl", rows)

    async def ids(seed: int) -> list[str]:
        env = make_env(env_cls=TerminalTasksEnv, dataset_name=tasks, seed=seed)
        await env.setup()
        return [(await env.get_next_item())["id"] for _ in range(14)]

    first = await ids(1)
    assert sorted(first[:7]) == [str(i) for i in range(7)] and first[7:] == first[:7]
    assert await ids(1) == first
    assert await ids(2) != first


async def test_a_failing_setup_command_drops_the_group(make_env: Any, tmp_path: Path, caplog: Any) -> None:
    row = {"id": "broken", "prompt": "p", "setup": "echo oops; exit 3", "check": "true"}
    env = make_env(
        lambda messages, call: completion("done"),
        env_cls=TerminalTasksEnv,
        dataset_name=write_rows(tmp_path / "t.jsonl", [row]),
        group_size=2,
    )
    await env.setup()
    group, _ = await env.collect_trajectories(await env.get_next_item())
    assert group is None and env.rollout_stats.groups_dropped == 1
    assert "setup of task 'broken' failed (exit 3): oops" in caplog.text
    assert env.server.calls == 0  # the model was never asked
