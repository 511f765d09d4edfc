"""A tiny HermesAgentBaseEnv and an in-process chat server for the env tests (Phase 1, local backend)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from atroposlib.envs.server_handling.server_baseline import APIServerConfig
from hermes_env.agent.loop import AgentResult
from hermes_env.env import HermesAgentBaseEnv
from hermes_env.testing import qwen3_tokenizer_dir
from hermes_env.testing.completions import scripted_completion as completion
from openai.types.chat import ChatCompletion

TASKS = [
    {"id": "hello", "prompt": "Create hello.txt containing the word hi.", "solution": "echo hi > hello.txt"},
    {"id": "nums", "prompt": "Write the numbers 1 to 3 to nums.txt, one per line.", "solution": "seq 1 3 > nums.txt"},
]
CHECKS = {"hello": "grep -qx hi hello.txt", "nums": 'test "$(cat nums.txt)" = "$(seq 1 3)"'}


class FakeChat:
    """Stands in for ServerManager.chat_completion: ``policy(messages, call_index) -> ChatCompletion``."""

    def __init__(self, servers: list[Any], policy: Callable[[list[dict[str, Any]], int], ChatCompletion]) -> None:
        self.servers = servers
        self.policy = policy
        self.calls = 0
        self.requests: list[dict[str, Any]] = []

    async def chat_completion(self, **kwargs: Any) -> ChatCompletion:
        self.calls += 1
        self.requests.append(kwargs)
        return self.policy(kwargs["messages"], self.calls)


class TinyEnv(HermesAgentBaseEnv):
    name = "tiny"
    reward_error: Exception | None = None

    async def setup(self) -> None:
        self.cursor = 0
        self.events: list[tuple[str, str]] = []

    async def get_next_item(self) -> dict[str, Any]:
        item = TASKS[self.cursor % len(TASKS)]
        self.cursor += 1
        return item

    def format_prompt(self, item: dict[str, Any]) -> str:
        return item["prompt"]

    async def setup_trajectory_workspace(self, item: Any, trajectory_id: str, exec_tool: Any) -> None:
        self.events.append(("setup", trajectory_id))
        await exec_tool.write_file("README", "workspace of " + item["id"])

    async def verify_and_score_trajectory(self, item: Any, result: AgentResult, ctx: Any) -> float:
        self.events.append(("verify", ctx.task_id))
        return await super().verify_and_score_trajectory(item, result, ctx)

    async def compute_reward(self, item: dict[str, Any], result: AgentResult, ctx: Any) -> float:
        if self.reward_error is not None:
            raise self.reward_error
        check = await ctx.terminal(CHECKS[item["id"]], timeout=10)
        return 1.0 if check.ok else 0.0

    async def evaluate(self, *args: Any, **kwargs: Any) -> None:
        return None


class SolveOrFail:
    """A policy whose odd-numbered openings solve (tool call then answer) and even ones run a wrong command.

    Openings are counted on their own, not among all calls, so a group of four always has two of each
    however the rollouts' turns interleave.
    """

    def __init__(self) -> None:
        self.openings = 0

    def __call__(self, messages: list[dict[str, Any]], call: int) -> ChatCompletion:
        last = messages[-1]
        task = next(t for t in TASKS if t["prompt"] in last["content"]) if last["role"] == "user" else None
        if task is not None:
            self.openings += 1
            command = task["solution"] if self.openings % 2 else "echo nope > other.txt"
            return completion("<think>plan</think>", [("terminal", {"command": command})])
        return completion("Done.")


@pytest.fixture
def make_env(tmp_path: Path) -> Callable[..., Any]:

    def make(
        policy: Callable[..., ChatCompletion] | None = None, env_cls: type[Any] = TinyEnv, **overrides: Any
    ) -> Any:
        fields: dict[str, Any] = {
            "tokenizer_name": str(qwen3_tokenizer_dir()),
            "group_size": 4,
            "use_wandb": False,
            "include_messages": True,
            "enabled_toolsets": ["terminal", "file"],
            "terminal_backend": "local",
            "terminal_backend_options": {"root": str(tmp_path / "ws")},
            "max_agent_turns": 4,
            "terminal_timeout": 10,
        }
        fields.update(overrides)
        config = env_cls.env_config_cls(**fields)
        server = APIServerConfig(base_url="http://127.0.0.1:9/v1", server_type="openai", api_key="x", model_name="m")
        env = env_cls(config, [server])
        env.server = FakeChat(env.server.servers, policy or SolveOrFail())  # type: ignore[assignment]
        return env

    return make
