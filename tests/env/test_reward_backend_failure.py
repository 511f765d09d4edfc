"""A backend that fails under the reward's (or the workspace setup's) ToolContext calls fails the rollout:
its group is dropped with cause ``sandbox_failed``; it is never scored 0.0, even when the reward code
catches the exception itself, as hermes-agent reward code often does."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from env_fixtures import CHECKS, TinyEnv
from hermes_env.agent.loop import AgentResult
from hermes_env.agent_env.calls import ToolCall
from hermes_env.backends.base import ExecResult
from hermes_env.backends.local import LocalBackend
from hermes_env.errors import BackendFailure


class DyingBackend(LocalBackend):
    """The local backend until ``dead`` is set; then every call fails as a lost sandbox worker's does."""

    dead = False

    async def execute(self, task_id: str, command: str, timeout: float, *, stdin: str | None = None) -> ExecResult:
        if self.dead:
            return ExecResult.failure("worker_lost", "sandbox worker w0 did not answer (connection reset)")
        return await super().execute(task_id, command, timeout, stdin=stdin)

    async def read_file(self, task_id: str, path: str) -> bytes:
        if self.dead:
            raise BackendFailure(f"sandbox worker_lost for {path!r}: connection reset")
        return await super().read_file(task_id, path)


def sync_dict_reward(ctx: Any, item: dict[str, Any]) -> float:
    return 1.0 if ctx.terminal(CHECKS[item["id"]])["exit_code"] == 0 else 0.0


def sync_reward_catching_everything(ctx: Any, item: dict[str, Any]) -> float:
    try:
        return 1.0 if ctx.terminal(CHECKS[item["id"]])["exit_code"] == 0 else 0.0
    except Exception:
        return 0.0


def sync_read_file_catching_everything(ctx: Any, item: dict[str, Any]) -> float:
    try:
        return 1.0 if "hi" in ctx.read_file("hello.txt").get("content", "") else 0.0
    except Exception:
        return 0.0


def sync_reward_wrapping_the_error(ctx: Any, item: dict[str, Any]) -> float:
    try:
        ctx.terminal(CHECKS[item["id"]])
    except Exception as exc:
        raise ValueError("could not verify") from exc
    return 1.0


async def async_reward_catching_everything(ctx: Any, item: dict[str, Any]) -> float:
    try:
        check = await ctx.terminal(CHECKS[item["id"]])
    except BackendFailure:
        return 0.0
    return 1.0 if check.ok else 0.0


async def agent_env_exec_tool_reward(ctx: Any, item: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    try:
        answer = await ctx(ToolCall(name="terminal", arguments={"command": CHECKS[item["id"]]}))
    except Exception as exc:
        return 0.0, {"error": str(exc)}
    return (1.0 if answer.success else 0.0), {}


REWARDS: list[Callable[..., Any]] = [
    sync_dict_reward,
    sync_reward_catching_everything,
    sync_read_file_catching_everything,
    sync_reward_wrapping_the_error,
    async_reward_catching_everything,
    agent_env_exec_tool_reward,
]


class DiesUnderTheReward(TinyEnv):
    reward: Callable[..., Any] = staticmethod(sync_dict_reward)
    kill_in_setup = False
    kill_in_reward = True

    async def setup_trajectory_workspace(self, item: Any, trajectory_id: str, exec_tool: Any) -> None:
        if self.kill_in_setup:
            self.backend.dead = True
            try:  # a setup hook that swallows the failure still leaves an unusable workspace
                await exec_tool.terminal("git init -q")
            except BackendFailure:
                pass
        await super().setup_trajectory_workspace(item, trajectory_id, exec_tool)

    async def verify_and_score_trajectory(self, item: Any, result: AgentResult, ctx: Any) -> Any:
        self.backend.dead = self.kill_in_reward
        scored = self.reward(ctx, item)
        return await scored if hasattr(scored, "__await__") else scored


def _dying_env(make_env: Any, tmp_path: Path, **fields: Any) -> Any:
    env = make_env(env_cls=DiesUnderTheReward, group_size=2, **fields)
    env._backend = DyingBackend(root=str(tmp_path / "ws"))
    return env


@pytest.mark.parametrize("reward", REWARDS, ids=lambda f: f.__name__)
async def test_a_backend_dying_under_the_reward_drops_the_group_as_sandbox_failed(
    make_env: Any, tmp_path: Path, caplog: Any, reward: Callable[..., Any]
) -> None:
    env = _dying_env(make_env, tmp_path)
    env.reward = reward
    await env.setup()
    group, backlog = await env.collect_trajectories(await env.get_next_item())
    assert group is None and backlog == []
    assert env.rollout_stats.dropped_by_cause == {"sandbox_failed": 1}
    assert env.rollout_stats.summary()["reward_failures"] == 0  # not a broken reward: a dead sandbox
    assert "sandbox_failed: the tool backend failed" in caplog.text and "connection reset" in caplog.text
    assert "scoring it 0.0" not in caplog.text


async def test_a_backend_dying_under_a_setup_that_swallows_it_drops_the_group(
    make_env: Any, tmp_path: Path, caplog: Any
) -> None:
    env = _dying_env(make_env, tmp_path)
    env.kill_in_setup = True
    await env.setup()
    env.server.policy = lambda *a: pytest.fail("the model must not be asked about a dead workspace")
    group, _ = await env.collect_trajectories(await env.get_next_item())
    assert group is None and env.rollout_stats.dropped_by_cause == {"sandbox_failed": 1}


async def test_a_reward_on_a_live_backend_still_scores(make_env: Any, tmp_path: Path) -> None:
    env = _dying_env(make_env, tmp_path)
    env.reward, env.kill_in_reward = sync_reward_catching_everything, False
    await env.setup()
    group, _ = await env.collect_trajectories(await env.get_next_item())
    assert group is not None and sorted(group["scores"]) == [0.0, 1.0]
    assert env.rollout_stats.dropped_by_cause == {}


async def test_the_context_keeps_the_first_failure_for_sync_and_awaited_calls(tmp_path: Path) -> None:
    from hermes_env.tool_context import ToolContext

    backend = DyingBackend(root=str(tmp_path / "ws"))
    ctx = ToolContext("t1", backend)
    assert (await ctx.terminal("true")).ok and ctx.backend_failure is None
    backend.dead = True
    with pytest.raises(BackendFailure, match="connection reset"):
        ctx.read_text("x.txt")  # synchronous, through the helper loop
    first = ctx.backend_failure
    assert isinstance(first, BackendFailure)
    with pytest.raises(BackendFailure):
        await ctx.terminal("true")
    assert ctx.backend_failure is first
    backend.dead = False
    await ctx.cleanup()
