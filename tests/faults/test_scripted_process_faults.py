"""``process`` against a scripted /generate server that fails on a later turn of one task's rollouts.

One group is in flight at a time and the two tasks alternate, so the run drops exactly the groups
of the faulty task until it has written the clean task's groups.

Whatever the failure, the run goes on, writes only complete groups of finished rollouts (every
line whole, masks token-or--100, trained logprobs finite and <= 0), drops every group with a
failed rollout whole, logs each once at WARNING with its cause and reports the causes in the
summary."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fault_checks import FAULT_CAUSE, FirstTaskFaulty, read_trainable, user_prompt
from hermes_env.testing.scripted_vllm import FaultAtTurn


async def _run(env: Any, capsys: Any) -> str:
    await env.process_manager()
    return capsys.readouterr().out


def _assert_dropped(env: Any, cause: str, caplog: Any, printed: str, groups: int) -> None:
    dropped = env.rollout_stats.dropped_by_cause
    assert dropped == {cause: groups}, dropped
    logs = [r for r in caplog.records if "dropping group" in r.getMessage()]
    assert len(logs) == dropped[cause], [r.getMessage() for r in logs]  # once per dropped group
    assert all(r.levelname == "WARNING" and f"; {cause}: " in r.getMessage() for r in logs)
    assert all("turn 2" in r.getMessage() or cause != "policy_http_error" for r in logs)
    row = next(line for line in printed.splitlines() if "groups dropped" in line)
    assert row.split(None, 2)[2] == f"{groups} ({cause} {groups})", row


@pytest.mark.parametrize("fault", sorted(set(FAULT_CAUSE) - {"hang"}))
async def test_scripted_fault_on_a_later_turn_drops_its_groups_and_writes_only_finished_ones(
    scripted_server: Any, process_env: Any, solution_policy: Any, tok: Any, tmp_path: Path, caplog: Any,
    capsys: Any, fault: str,
) -> None:  # fmt: skip
    faulty = FirstTaskFaulty()
    server = scripted_server(FaultAtTurn(solution_policy.vllm_responder, fault, turn=1, when=faulty))
    env = process_env(server, groups=2, group_size=2, process_concurrency=1)
    printed = await _run(env, capsys)
    groups = read_trainable(tmp_path / "groups.jsonl", 2, len(tok))
    assert len(groups) == 2
    assert all(user_prompt(conv) == faulty.clean_prompt for g in groups for conv in g["messages"])
    assert all(g["end_reasons"] == ["stop", "stop"] for g in groups)
    _assert_dropped(env, FAULT_CAUSE[fault], caplog, printed, groups=2)
    assert fault in server.faults


async def test_scripted_fault_on_the_first_turn_writes_no_prompt_only_rollouts(
    scripted_server: Any, process_env: Any, solution_policy: Any, tok: Any, tmp_path: Path, caplog: Any, capsys: Any
) -> None:
    faulty = FirstTaskFaulty()
    server = scripted_server(FaultAtTurn(solution_policy.vllm_responder, "nan_logprob", turn=0, when=faulty))
    env = process_env(server, groups=2, group_size=2, process_concurrency=1)
    printed = await _run(env, capsys)
    groups = read_trainable(tmp_path / "groups.jsonl", 2, len(tok))
    assert all(user_prompt(conv) == faulty.clean_prompt for g in groups for conv in g["messages"])
    _assert_dropped(env, "policy_bad_response", caplog, printed, groups=2)


async def test_scripted_hang_past_the_rollout_budget_is_a_logged_policy_timeout(
    scripted_server: Any, process_env: Any, solution_policy: Any, tok: Any, tmp_path: Path, caplog: Any, capsys: Any
) -> None:
    # The faulty task's second model call never returns; the rollout budget (not the request timeout) ends it.
    faulty = FirstTaskFaulty()
    server = scripted_server(FaultAtTurn(solution_policy.vllm_responder, "hang", turn=1, when=faulty))
    env = process_env(server, groups=1, group_size=2, rollout_timeout=8, process_concurrency=1)
    printed = await _run(env, capsys)
    groups = read_trainable(tmp_path / "groups.jsonl", 2, len(tok))
    assert len(groups) == 1 and user_prompt(groups[0]["messages"][0]) == faulty.clean_prompt
    _assert_dropped(env, "policy_timeout", caplog, printed, groups=1)
    assert "did not return within the rollout budget (rollout_timeout=8s)" in caplog.text


async def test_scripted_slow_server_within_the_budget_loses_nothing(
    scripted_server: Any, process_env: Any, solution_policy: Any, tok: Any, tmp_path: Path, capsys: Any
) -> None:
    server = scripted_server(FaultAtTurn(solution_policy.vllm_responder, "slow", turn=1, seconds=0.5))
    env = process_env(server, groups=2, group_size=2)
    await _run(env, capsys)
    groups = read_trainable(tmp_path / "groups.jsonl", 2, len(tok))
    assert len(groups) == 2 and env.rollout_stats.groups_dropped == 0 and "slow" in server.faults
