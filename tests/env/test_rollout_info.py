"""``rollout_info`` in written groups (task, finish reasons, the reward's own checks), and a backend that cannot
start stopping the run before any rollout, with the backend's reason as the last line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from env_fixtures import CHECKS, TASKS
from hermes_env.backends.local import LocalBackend
from hermes_env.env.rollout_info import task_id_of


async def _no_preflight(**kwargs: Any) -> None:
    return None


async def test_written_groups_say_what_each_rollout_did_and_what_the_reward_ran(make_env: Any, tmp_path: Path) -> None:
    out = tmp_path / "groups.jsonl"
    env = make_env(data_path_to_save_groups=str(out), ensure_scores_are_not_same=False)
    env.n_groups_to_process, env.group_size_to_process = 2, 4
    env.preflight = _no_preflight  # type: ignore[method-assign]
    await env.process_manager()
    groups = [json.loads(line) for line in out.read_text().splitlines()]
    # Groups are written as they finish, so in either order: pair each with its task by the id it records.
    by_task = {group["rollout_info"][0]["task_id"]: group for group in groups}
    assert len(groups) == 2 and sorted(by_task) == sorted(t["id"] for t in TASKS)
    for task in TASKS:
        group = by_task[task["id"]]
        infos = group["rollout_info"]
        assert len(infos) == len(group["scores"]) == 4 and group["end_reasons"] == ["stop"] * 4
        for info, score in zip(infos, group["scores"], strict=True):
            assert info["task_id"] == task["id"] and info["parse_issues"] == []
            assert info["turns"] == 2 and info["tool_calls"] == 1 and sorted(info["toolsets"]) == ["file", "terminal"]
            assert len(info["finish_reasons"]) == 2
            (check,) = info["reward"]["checks"]  # the reward's ctx.terminal call, not the setup's write_file
            assert check["command"] == CHECKS[task["id"]] and (check["exit_code"] == 0) == (score == 1.0)
            assert info["reward"]["score"] == score and info["reward"]["error"] is None
    html = out.with_suffix(".html").read_text()
    assert f"task <code>{TASKS[0]['id']}</code>" in html and CHECKS["hello"] in html


async def test_a_reward_that_raises_is_recorded(make_env: Any, tmp_path: Path) -> None:
    out = tmp_path / "groups.jsonl"
    env = make_env(data_path_to_save_groups=str(out), ensure_scores_are_not_same=False)
    env.reward_error = KeyError("answer")
    env.n_groups_to_process, env.group_size_to_process = 1, 2
    env.preflight = _no_preflight  # type: ignore[method-assign]
    await env.process_manager()
    (group,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert group["scores"] == [0.0, 0.0]
    assert all(i["reward"]["error"] == "raised KeyError: 'answer'" for i in group["rollout_info"])


def test_task_id_of() -> None:
    assert task_id_of({"id": 7}) == "7" and task_id_of({"task_id": "a"}) == "a"
    assert task_id_of({"n": 3}) is None and task_id_of("plain prompt") is None


class _UnstartableBackend(LocalBackend):
    async def start(self, task_id: str) -> None:
        raise RuntimeError("could not connect to the Ray cluster at 'auto'")


async def test_a_backend_that_cannot_start_stops_the_run_before_any_rollout(make_env: Any, tmp_path: Path) -> None:
    env = make_env(data_path_to_save_groups=str(tmp_path / "groups.jsonl"))
    env._backend = _UnstartableBackend(root=tmp_path / "ws")
    env.n_groups_to_process, env.group_size_to_process = 2, 2
    with pytest.raises(SystemExit, match=r"terminal backend 'local' cannot be used: could not connect to the Ray"):
        await env.process_manager()
    assert env.server.calls == 0
