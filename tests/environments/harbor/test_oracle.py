"""The oracle command on the Harbor tasks in ``tasks/`` (written for these tests, in Terminal-Bench 2's style):
real images built on the local bases, real containers, the tasks' own verifiers run offline."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hermes_env.backends.docker import DockerBackend
from hermes_env.containers import detect_engine
from hermes_env.containers.upstream_images import UpstreamImageBuilder
from hermes_env.environments.harbor.oracle import check_task, main
from hermes_env.environments.harbor.runner import HarborRunner
from hermes_env.environments.harbor.task import load_task

pytestmark = pytest.mark.containers

TASKS = Path(__file__).parent / "tasks"


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("oracle") / "report"
    code = main([str(TASKS), "--jobs", "2", "--out", str(out)])
    rows = {row["task"]: row for row in json.loads(out.with_suffix(".json").read_text())}
    return {"code": code, "rows": rows, "html": out.with_suffix(".html").read_text()}


def test_exit_status_and_report_files(report: dict[str, Any]) -> None:
    assert report["code"] == 1  # wrong-solution, tamper-verifier and broken-build fail their oracle
    assert set(report["rows"]) == {p.name for p in TASKS.iterdir() if (p / "task.toml").is_file()}
    assert "<table>" in report["html"] and "wrong-solution" in report["html"]


@pytest.mark.parametrize("name", ["count-words", "ubuntu-jq", "big-buffer", "offline-note"])
def test_good_tasks_fail_before_and_pass_after(report: dict[str, Any], name: str) -> None:
    row = report["rows"][name]
    assert (row["status"], row["reward_before"], row["reward_after"]) == ("pass", 0.0, 1.0), row
    assert all(row[k] is not None for k in ("build_s", "solve_s", "test_before_s", "test_after_s"))


def test_cpus_past_the_host_are_clamped_and_said(report: dict[str, Any]) -> None:
    assert "cpus = 64 clamped" in report["rows"]["ubuntu-jq"]["notes"]


def test_a_wrong_solution_is_reported(report: dict[str, Any]) -> None:
    row = report["rows"]["wrong-solution"]
    assert (row["status"], row["reward_after"]) == ("fail", 0.0)
    assert "after the solution" in row["reason"]


def test_tampering_with_the_verifiers_tools_gains_nothing(report: dict[str, Any]) -> None:
    # Its solve.sh rewrites the image's pytest, plants python3.13/uvx and an env file, pre-writes the reward and
    # uv configuration, and checks that the toolbox is read-only (it exits 3 if it could write there).
    row = report["rows"]["tamper-verifier"]
    assert (row["status"], row["reward_before"], row["reward_after"]) == ("fail", 0.0, 0.0), row


def test_a_broken_build_fails_its_task_with_the_log(report: dict[str, Any]) -> None:
    row = report["rows"]["broken-build"]
    assert (row["status"], row["reason"]) == ("fail", "build failed")
    assert "this recipe cannot build" in row["log_tail"]


def test_a_task_without_solution_gets_the_before_check(report: dict[str, Any]) -> None:
    row = report["rows"]["no-solution"]
    assert (row["status"], row["reward_before"], row["solve_s"]) == ("no-solution", 0.0, None)


def test_memory_mb_is_honoured(report: dict[str, Any]) -> None:
    # big-buffer passed with its memory_mb = 3584; held to 2048 MiB (Harbor's default) its solution cannot.
    async def capped() -> dict[str, Any]:
        engine = detect_engine(None)
        backend = DockerBackend(engine=engine.program)
        try:
            row = await check_task(HarborRunner(engine, memory_mb_cap=2048), backend, load_task(TASKS / "big-buffer"))
        finally:
            await backend.aclose()
        return row.__dict__

    row = asyncio.run(capped())
    assert row["status"] == "fail" and row["reward_after"] is None, row
    assert "out-of-memory killer" in row["reason"] and "capped at 2048" in row["notes"]


def test_an_unchanged_task_reuses_its_image(report: dict[str, Any]) -> None:
    async def build_twice() -> tuple[str, str | None, str, str | None]:
        engine = detect_engine(None)
        builder = UpstreamImageBuilder(engine)
        first = await builder.build(TASKS / "offline-note" / "environment")
        first_id = await engine.image_id(first)
        again = await UpstreamImageBuilder(engine).build(TASKS / "offline-note" / "environment")
        return first, first_id, again, await engine.image_id(again)

    first, first_id, again, again_id = asyncio.run(build_twice())
    assert (first, first_id) == (again, again_id)
