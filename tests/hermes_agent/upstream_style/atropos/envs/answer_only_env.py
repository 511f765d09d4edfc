"""An environment in the style of hermes-agent's atropos/ integration whose ``verify_and_score_trajectory`` takes
neither ``agent_result`` nor ``workspace_meta`` (an override need not name them), and that sets its own
``build_tools``-free agent config. Test fixture, ported and run by ``tests/hermes_agent/test_atropos_front.py``.
"""

from __future__ import annotations

from typing import Any

from atroposlib.envs.base import APIServerConfig, Item

from ..agent import AgentConfig
from ..tools import ToolCall
from .agent_env import AgentEnv, AgentEnvConfig


class AnswerOnlyEnv(AgentEnv[AgentEnvConfig]):
    name = "answer_only_env"
    env_config_cls = AgentEnvConfig

    @classmethod
    def config_init(cls) -> tuple[AgentEnvConfig, list[APIServerConfig]]:
        config = AgentEnvConfig(
            tokenizer_name="NousResearch/Hermes-4.3-36B", group_size=2, use_wandb=False, total_steps=2
        )
        return config, [APIServerConfig(model_name="m", base_url="http://127.0.0.1:8080/v1", api_key="local")]

    async def setup_agent_env(self) -> None:
        self.count = 0

    async def get_next_item(self) -> Item:
        self.count += 1
        return {"n": self.count}

    def build_task(self, item: Item) -> str:
        return f"What is {item['n']} + {item['n']}? Answer with just the number."

    def build_agent_config(self, item: Item) -> AgentConfig:  # noqa: ARG002
        return AgentConfig(max_steps=2, temperature=0.7, max_tokens=64)

    async def score_trajectory(self, item: Item, final_response: str) -> float:
        return 1.0 if final_response.strip() == str(2 * item["n"]) else 0.0

    async def verify_and_score_trajectory(
        self, item: Item, final_response: str, *, trajectory_id: str, exec_tool
    ) -> tuple[float, dict[str, Any]]:
        echo = await exec_tool(ToolCall(name="terminal", arguments={"command": "echo alive"}))
        score = await self.score_trajectory(item, final_response)
        return score, {"sandbox": echo.output.strip(), "trajectory": trajectory_id.split("-")[0]}


if __name__ == "__main__":
    AnswerOnlyEnv.cli()
