"""HermesAgentBaseEnv in Phase 1 against an in-process chat server, tools on the local backend."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from env_fixtures import TASKS, SolveOrFail, completion
from hermes_env.testing import qwen3_tokenizer


async def test_group_is_complete_with_real_phase1_masks(make_env: Any, tmp_path: Path) -> None:
    env = make_env()
    await env.setup()
    group, backlog = await env.collect_trajectories(await env.get_next_item())
    assert backlog == [] and group is not None
    assert len(group["tokens"]) == len(group["masks"]) == len(group["scores"]) == len(group["messages"]) == 4
    assert sorted(group["scores"]) == [0.0, 0.0, 1.0, 1.0]
    assert "inference_logprobs" not in group  # Phase 1 has no sampler logprobs
    tok = qwen3_tokenizer()
    for tokens, masks, messages in zip(group["tokens"], group["masks"], group["messages"], strict=True):
        assert len(tokens) == len(masks)
        trained = [t for t, m in zip(tokens, masks, strict=True) if m != -100]
        assert all(m in (-100, t) for t, m in zip(tokens, masks, strict=True))
        text = tok.decode(trained)
        # Exactly the assistant turns are trained: their tool calls and answers, not the prompt or tool output.
        assert "Done." in text and "<tool_call>" in text and text.count("<|im_end|>") == 2
        assert TASKS[0]["prompt"] not in text and "<|im_start|>user" not in text
        assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "assistant"] or [
            m["role"] for m in messages
        ] == ["user", "assistant", "tool", "assistant"]
    # Success/failure follows what was run, and every workspace is gone afterwards.
    for score, messages in zip(group["scores"], group["messages"], strict=True):
        command = json.loads(messages[1]["tool_calls"][0]["function"]["arguments"])["command"]
        assert score == (1.0 if command == TASKS[0]["solution"] else 0.0)
    assert os.listdir(tmp_path / "ws") == []
    # Hooks ran in order for each rollout: workspace setup, then scoring.
    by_id: dict[str, list[str]] = {}
    for event, tid in env.events:
        by_id.setdefault(tid, []).append(event)
    assert len(by_id) == 4 and all(v == ["setup", "verify"] for v in by_id.values())


async def test_same_tools_within_a_group_and_sampled_per_group(make_env: Any) -> None:
    env = make_env(enabled_toolsets=None, distribution="balanced", group_size=2)
    await env.setup()
    seen = []
    for _ in range(6):
        before = len(env.server.requests)
        group, _ = await env.collect_trajectories(await env.get_next_item())
        tool_sets = {
            tuple(sorted(t["function"]["name"] for t in r.get("tools", []))) for r in env.server.requests[before:]
        }
        assert len(tool_sets) == 1  # resolved once for the group
        seen.append(tool_sets.pop())
    assert len(set(seen)) > 1  # and drawn again for each group


async def test_reward_that_raises_scores_zero_and_the_group_goes_on(make_env: Any, caplog: Any) -> None:
    env = make_env()
    env.reward_error = RuntimeError("reward bug")
    await env.setup()
    group, _ = await env.collect_trajectories(await env.get_next_item())
    assert group is not None and group["scores"] == [0.0] * 4
    assert "compute_reward raised" in caplog.text and "reward bug" in caplog.text
    assert env.rollout_stats.summary()["reward_failures"] == 4


async def test_reward_that_hangs_scores_zero(make_env: Any, caplog: Any) -> None:
    import asyncio

    env = make_env(group_size=2, reward_timeout=0.2)

    async def hang(item: Any, result: Any, ctx: Any) -> float:
        await asyncio.Event().wait()
        return 1.0

    env.compute_reward = hang  # type: ignore[method-assign]
    await env.setup()
    group, _ = await env.collect_trajectories(await env.get_next_item())
    assert group is not None and group["scores"] == [0.0, 0.0]
    assert "did not finish within reward_timeout" in caplog.text


async def test_nothing_produced_skips_the_reward_and_trains_nothing(make_env: Any) -> None:
    from openai.types.chat import ChatCompletion

    def length_cut(messages: list[dict[str, Any]], call: int) -> ChatCompletion:
        return completion("solving..." if call % 2 else None, [("terminal", {"command": "echo hi > hello.txt"})])

    env = make_env(length_cut, max_agent_turns=1, group_size=2)
    env.reward_error = AssertionError("reward must not run for an empty rollout")
    await env.setup()
    # Zero turns: a budget exhausted before the first answer.
    env.config.rollout_timeout = 1e-9
    group, _ = await env.collect_trajectories(await env.get_next_item())
    assert group is not None and group["scores"] == [0.0, 0.0]
    assert all(all(m == -100 for m in masks) for masks in group["masks"])
    assert env.rollout_stats.summary()["reward_failures"] == 0


async def test_a_failed_rollout_drops_the_whole_group(make_env: Any, caplog: Any) -> None:
    def flaky(messages: list[dict[str, Any]], call: int) -> Any:
        if call == 3:
            raise ConnectionError("server went away")
        return completion("Done.")

    env = make_env(flaky)
    await env.setup()
    group, _ = await env.collect_trajectories(await env.get_next_item())
    assert group is None
    assert env.rollout_stats.groups_dropped == 1 and "server went away" in caplog.text
    assert env.rollout_stats.dropped_by_cause == {"policy_connection_error": 1}
    drops = [r for r in caplog.records if "dropping group" in r.getMessage()]
    assert len(drops) == 1 and drops[0].levelname == "WARNING"
    assert "group 1 (item 'hello'): 1 of 4 rollouts failed; policy_connection_error" in drops[0].getMessage()


async def test_a_failure_after_the_first_turn_still_drops_the_group(make_env: Any, caplog: Any) -> None:
    """A rollout that already produced output is not scored or written when a later model call fails."""

    solve = SolveOrFail()
    followups = 0

    def fails_on_second_turn(messages: list[dict[str, Any]], call: int) -> Any:
        nonlocal followups
        if messages[-1]["role"] == "tool":
            followups += 1
            if followups == 2:
                raise TimeoutError()
        return solve(messages, call)

    env = make_env(fails_on_second_turn)
    await env.setup()
    group, _ = await env.collect_trajectories(await env.get_next_item())
    assert group is None and env.rollout_stats.dropped_by_cause == {"policy_timeout": 1}
    assert env.rollout_stats.summary()["rollouts"] == 0
    assert "policy_timeout: the model call on turn 2 failed: TimeoutError" in caplog.text
    assert [event for event, _ in env.events].count("verify") == 3  # the failed rollout was never scored


async def test_bad_tool_calls_are_counted_per_kind(make_env: Any) -> None:
    def clumsy(messages: list[dict[str, Any]], call: int) -> Any:
        if messages[-1]["role"] == "user":
            return completion(None, [("shell", {"command": "ls"}), ("terminal", '{"command": ')])
        return completion("Done.")

    env = make_env(clumsy, group_size=2)
    await env.setup()
    group, _ = await env.collect_trajectories(await env.get_next_item())
    assert group is not None
    tool_replies = [m["content"] for m in group["messages"][0] if m["role"] == "tool"]
    assert "unknown tool 'shell'" in tool_replies[0] and "not valid JSON" in tool_replies[1]
    metrics = env.rollout_stats.drain_metrics()
    assert metrics["train/tool_errors/unknown_tool"] == 1.0 and metrics["train/tool_errors/malformed_json"] == 1.0
    assert metrics["train/tool_errors_per_rollout"] == 2.0


@pytest.mark.parametrize("phase", ["managed"])
def test_managed_phase_needs_token_ids(make_env: Any, phase: str) -> None:
    from hermes_env.errors import PhaseError

    with pytest.raises(PhaseError, match="needs token ids and logprobs.*server_type vllm"):
        make_env(phase=phase)


@pytest.mark.parametrize("concurrency", [1, 3])
async def test_process_writes_whole_lines_html_and_summary(
    make_env: Any, tmp_path: Path, capsys: Any, concurrency: int
) -> None:
    out = tmp_path / "out" / "groups.jsonl"
    env = make_env(data_path_to_save_groups=str(out), ensure_scores_are_not_same=False, process_concurrency=concurrency)
    env.n_groups_to_process, env.group_size_to_process = 5, 4
    env.preflight = _no_preflight  # type: ignore[method-assign]
    await env.process_manager()
    lines = out.read_text().splitlines()
    assert len(lines) == 5 and all(len(json.loads(line)["scores"]) == 4 for line in lines)
    assert out.with_suffix(".html").is_file() and "terminal" in out.with_suffix(".html").read_text()
    printed = capsys.readouterr().out
    assert "groups written" in printed and "mean reward" in printed and "trained tokens" in printed


async def test_process_stops_cleanly_when_every_group_fails(make_env: Any, tmp_path: Path) -> None:
    def down(messages: list[dict[str, Any]], call: int) -> Any:
        raise ConnectionError("connection refused")

    out = tmp_path / "groups.jsonl"
    env = make_env(down, data_path_to_save_groups=str(out), max_failed_groups_in_a_row=2)
    env.n_groups_to_process, env.group_size_to_process = 5, 2
    env.preflight = _no_preflight  # type: ignore[method-assign]
    # The last line says what went wrong, not a guess: here the model call failed.
    with pytest.raises(
        SystemExit,
        match=r"no groups were produced: [2-5] groups in a row were dropped \(.*\); the last because: .*connection",
    ):
        await env.process_manager()
    assert not out.exists()  # no empty file left behind


async def test_unreachable_server_is_reported_before_anything_runs(make_env: Any) -> None:
    from hermes_env.env.preflight import check_servers
    from hermes_env.errors import InferenceServerUnreachable

    env = make_env()
    with pytest.raises(InferenceServerUnreachable, match=r"cannot reach the inference server at http://127.0.0.1:9/v1"):
        await check_servers(env.server, wait=0.0)


async def _no_preflight(**kwargs: Any) -> None:
    return None


async def test_a_hanging_command_times_out_and_the_group_completes(make_env: Any) -> None:
    def hang(messages: list[dict[str, Any]], call: int) -> Any:
        if messages[-1]["role"] == "user":
            return completion(None, [("terminal", {"command": "sleep 600"})])
        return completion("Done.")

    env = make_env(hang, terminal_timeout=1, group_size=2)
    await env.setup()
    group, _ = await env.collect_trajectories(await env.get_next_item())
    assert group is not None and len(group["tokens"]) == 2
    reply = next(m["content"] for m in group["messages"][0] if m["role"] == "tool")
    assert "timed out" in reply.lower(), reply  # the backend's own limit, reported to the model


def test_tool_call_parser_is_detected_from_the_tokenizer(make_env: Any) -> None:
    assert make_env().tool_call_parser == "hermes"  # Qwen3's template uses <tool_call> JSON
    assert make_env(tool_call_parser="qwen3_xml").tool_call_parser == "qwen3_xml"


async def test_wandb_off_logs_nothing_to_wandb(make_env: Any, monkeypatch: Any) -> None:
    import wandb

    def boom(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("wandb must not be called when use_wandb is false")

    monkeypatch.setattr(wandb, "log", boom)
    monkeypatch.setattr(wandb, "Table", boom)
    env = make_env(group_size=2)
    await env.setup()
    await env.collect_trajectories(await env.get_next_item())
    await env.wandb_log({})
    assert env.rollout_stats.readable  # kept for when wandb is on


async def test_wandb_on_logs_tool_stats_and_readable_rollouts(make_env: Any, monkeypatch: Any) -> None:
    import wandb

    logged: list[dict[str, Any]] = []
    monkeypatch.setattr(wandb, "log", lambda metrics, step=None: logged.append(metrics))
    env = make_env(group_size=2, use_wandb=True)
    await env.setup()
    await env.collect_trajectories(await env.get_next_item())
    await env.wandb_log({})
    (metrics,) = logged
    assert metrics["train/mean_reward"] == 0.5 and metrics["train/mean_tool_calls"] == 1.0
    assert metrics["train/tool_errors_per_rollout"] == 0.0 and metrics["train/groups_dropped"] == 0
    table = metrics["train/rollouts"]
    assert isinstance(table, wandb.Table) and "[assistant -> terminal]" in table.data[0][0]


async def test_cancelled_group_still_cleans_every_workspace(make_env: Any, tmp_path: Path) -> None:
    import asyncio

    started = asyncio.Event()
    calls = 0

    class Hanging:
        def __init__(self, servers: list[Any]) -> None:
            self.servers = servers

        async def chat_completion(self, **kwargs: Any) -> Any:
            nonlocal calls
            calls += 1
            if calls == 4:
                started.set()
            await asyncio.Event().wait()

    env = make_env()
    env.server = Hanging(env.server.servers)
    await env.setup()
    task = asyncio.create_task(env.collect_trajectories(await env.get_next_item()))
    await asyncio.wait_for(started.wait(), 30)
    assert len(os.listdir(tmp_path / "ws")) == 4  # four live workspaces (README written by the setup hook)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert os.listdir(tmp_path / "ws") == []


async def test_waiting_for_a_server_that_comes_up_later(make_env: Any, caplog: Any) -> None:
    """serve waits for a server still loading its model (warning while it waits) instead of failing."""
    import asyncio
    import socket

    from hermes_env.env.preflight import check_servers
    from hermes_env.testing.scripted_openai import ScriptedOpenAIServer

    with socket.socket() as sock:  # a free port; the server starts there only after the check has begun
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = make_env()
    env.server.servers[0].config.base_url = f"http://127.0.0.1:{port}/v1"
    check = asyncio.create_task(check_servers(env.server, wait=None, interval=0.05, remind_every=0.1))
    await asyncio.sleep(0.3)
    assert not check.done() and "still waiting for the inference server" in caplog.text
    with ScriptedOpenAIServer(lambda messages, tools: "hi", port=port):
        await asyncio.wait_for(check, 30)
