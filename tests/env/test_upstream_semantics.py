"""hermes-agent's env semantics in HermesAgentBaseEnv: sync dict-reading rewards, (score, metadata), the idle
reaper behind terminal_lifetime, thinking_mode, reasoning_details, upstream wandb keys and logging counts."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any

import pytest
from env_fixtures import CHECKS, TASKS, TinyEnv, completion
from hermes_env.agent.loop import AgentResult, ToolError
from hermes_env.agent.reasoning import extract_reasoning
from hermes_env.backends.local import LocalBackend
from hermes_env.env.wandb_extras import ScoreMetadataLog, ToolErrorLog
from hermes_env.env.workspace_reaper import WorkspaceReaper
from hermes_env.errors import WorkspaceReaped


class SyncRewardEnv(TinyEnv):
    """compute_reward as hermes-agent users write it: no await, dict results."""

    def compute_reward(self, item: dict[str, Any], result: AgentResult, ctx: Any) -> float:  # type: ignore[override]
        check = ctx.terminal(CHECKS[item["id"]])
        return 1.0 if check["exit_code"] == 0 else 0.0


class MetadataEnv(TinyEnv):
    async def verify_and_score_trajectory(self, item: Any, result: AgentResult, ctx: Any) -> Any:
        check = await ctx.terminal(CHECKS[item["id"]])
        return (1.0 if check.ok else 0.0), {"passed": check.ok, "exit_code": check["exit_code"], "note": "x"}


async def test_a_plain_def_reward_with_sync_calls_scores_the_group(make_env: Any) -> None:
    env = make_env(env_cls=SyncRewardEnv)
    await env.setup()
    group, _ = await env.collect_trajectories(await env.get_next_item())
    assert group is not None and sorted(group["scores"]) == [0.0, 0.0, 1.0, 1.0]


async def test_score_metadata_is_kept_with_the_group_and_logged(make_env: Any) -> None:
    env = make_env(env_cls=MetadataEnv, num_rollouts_per_group_for_logging=-1)
    await env.setup()
    group, _ = await env.collect_trajectories(await env.get_next_item())
    assert group is not None
    meta = [o["score_metadata"] for o in group["overrides"]]
    assert [m["passed"] for m in meta] == [s == 1.0 for s in group["scores"]]
    assert len(env.rollout_stats.readable) == 4 and all("[score metadata]" in t for t, _ in env.rollout_stats.readable)
    metrics = env.score_metadata_log.drain_metrics()
    assert metrics["train/score_metadata/passed"] == 0.5 and "train/score_metadata/note" not in metrics


async def test_groups_without_metadata_carry_no_overrides(make_env: Any) -> None:
    env = make_env()
    await env.setup()
    group, _ = await env.collect_trajectories(await env.get_next_item())
    assert group is not None and group["overrides"] is None
    assert len(env.rollout_stats.readable) == 1  # num_rollouts_per_group_for_logging defaults to 1


def test_tool_error_log_has_hermes_agents_keys() -> None:
    log = ToolErrorLog()
    assert log.drain_metrics() == {"train/tool_errors_count": 0}
    log.add([ToolError(2, "read_file", '{"path": "x"}', "tool_failed", json.dumps({"error": "File not found: x"}))])
    metrics = log.drain_metrics()
    assert metrics == {
        "train/tool_errors_count": 1,
        "train/tool_error_details": '[turn 3] read_file({"path": "x"}) -> File not found: x',
    }
    assert log.drain_metrics() == {"train/tool_errors_count": 0}
    numbers = ScoreMetadataLog()
    numbers.add({"a": 1, "b": True, "c": "text", "d": float("nan")})
    numbers.add({"a": 3})
    assert numbers.drain_metrics() == {"train/score_metadata/a": 2.0, "train/score_metadata/b": 1.0}


async def test_thinking_mode_asks_the_chat_template_for_thinking(make_env: Any) -> None:
    env = make_env(thinking_mode=True, extra_body={"chat_template_kwargs": {"x": 1}, "top_k": 5})
    assert env.request_extra_body() == {"chat_template_kwargs": {"enable_thinking": True, "x": 1}, "top_k": 5}
    await env.setup()
    await env.collect_trajectories(await env.get_next_item())
    assert env.server.requests[0]["extra_body"]["chat_template_kwargs"]["enable_thinking"] is True
    assert make_env().request_extra_body() is None


def test_reasoning_details_openrouter_style() -> None:
    assert (
        extract_reasoning({"content": "x", "reasoning_details": [{"type": "reasoning.text", "text": "why"}]}) == "why"
    )
    assert (
        extract_reasoning({"content": "x", "reasoning_details": [{"type": "reasoning.summary", "summary": "s"}]}) == "s"
    )
    assert extract_reasoning({"content": "x", "reasoning": "r", "reasoning_details": [{"text": "t"}]}) == "r"


async def test_reaper_destroys_idle_workspaces_and_fails_their_rollout(tmp_path: Path) -> None:
    backend = LocalBackend(tmp_path / "ws")
    reaper = WorkspaceReaper(lifetime=100, scan_interval=1000)
    watched = reaper.watch("t1", backend)
    busy = reaper.watch("t2", backend)
    await watched.write_file("t1", "f", b"x")
    slow = asyncio.create_task(busy.execute("t2", "sleep 2", 10))  # a call in flight is activity
    await asyncio.sleep(0.2)
    later = asyncio.get_running_loop().time() + 500
    assert await reaper.reap_idle(now=later) == ["t1"]
    assert not backend.workspace_path("t1").exists()
    with pytest.raises(WorkspaceReaped, match="idle for .* longer than terminal_lifetime=100s"):
        await watched.read_file("t1", "f")
    with pytest.raises(WorkspaceReaped):
        reaper.check("t1")
    reaper.check("t2")
    slow.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await slow
    # A rollout whose background process still runs is kept alive (hermes-agent does the same).
    jobs = reaper.watch("t3", backend)
    jobs.keep_alive_while(lambda: True)
    assert await reaper.reap_idle(now=later + 500) == ["t2"]
    reaper.forget("t3")
    for task_id in ("t1", "t2"):
        reaper.forget(task_id)
    await backend.aclose()


async def test_a_reaped_rollout_drops_its_group(make_env: Any) -> None:
    env = make_env(terminal_lifetime=2.0, group_size=2)
    await env.setup()
    fake = env.server

    class SlowModel:
        servers = fake.servers

        async def chat_completion(self, **kwargs: Any) -> Any:
            if kwargs["messages"][-1]["role"] == "tool":
                await asyncio.sleep(4)  # the model is slow: the workspace sits idle past its lifetime
            return solve_then_done(kwargs["messages"], 0)

    env.server = SlowModel()
    env.reaper.scan_interval = 0.1
    group, _ = await env.collect_trajectories(await env.get_next_item())
    assert group is None and env.rollout_stats.groups_dropped == 1 and env.reaper.reaped == 2


def solve_then_done(messages: list[dict[str, Any]], call: int) -> Any:
    if messages[-1]["role"] == "user":
        task = next(t for t in TASKS if t["prompt"] in messages[-1]["content"])
        return completion(None, [("terminal", {"command": task["solution"]})])
    return completion("Done.")
