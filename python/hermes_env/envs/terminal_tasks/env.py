"""terminal_tasks: shell and file tasks whose result a shell check verifies inside the sandbox.

Each row of ``tasks.jsonl`` has ``id``, ``prompt``, ``setup`` (a shell command that prepares the
workspace, may be empty), ``check`` (a shell command that exits 0 when the task is done) and
``solution`` (a reference command, used by the scripted demo policy and the tests). The
reward is 1.0 when ``check`` passes in the rollout's own workspace after the model stops,
else 0.0.
"""

from __future__ import annotations

import logging
import random
from pathlib import Path
from typing import Any

from atroposlib.envs.server_handling.server_baseline import APIServerConfig
from pydantic import Field

from hermes_env.agent.loop import AgentResult
from hermes_env.env.base_env import HermesAgentBaseEnv
from hermes_env.env.config import HermesAgentEnvConfig
from hermes_env.env.dataset import load_rows
from hermes_env.env.defaults import default_server_config, default_tokenizer_name
from hermes_env.env.errors import RolloutFailed

logger = logging.getLogger(__name__)

HERE = Path(__file__).resolve().parent
TASKS_PATH = HERE / "tasks.jsonl"
CONFIG_PATH = HERE / "config.yaml"

SYSTEM_PROMPT = (
    "You are an agent working in a Linux shell. Your current directory is your workspace. "
    "Use the tools to complete the task, then reply with a short summary and no tool call."
)


class TerminalTasksConfig(HermesAgentEnvConfig):
    """Defaults for terminal_tasks; every field can be overridden from YAML or the command line."""

    dataset_name: str | None = Field(default=str(TASKS_PATH), description="Tasks file (.jsonl).")
    system_prompt: str | None = Field(default=SYSTEM_PROMPT, description="System message.")
    max_agent_turns: int = Field(default=8, ge=1, description="Model turns per rollout.")
    check_timeout: float = Field(default=30.0, gt=0, description="Time limit of a task's check, in seconds.")


class TerminalTasksEnv(HermesAgentBaseEnv):
    name = "terminal_tasks"
    env_config_cls = TerminalTasksConfig
    config: TerminalTasksConfig

    @classmethod
    def config_init(cls) -> tuple[TerminalTasksConfig, list[APIServerConfig]]:
        config = TerminalTasksConfig(
            tokenizer_name=default_tokenizer_name(),
            use_wandb=False,
            wandb_name=cls.name,
            group_size=4,
            total_steps=8,
            max_token_length=8192,
        )
        return config, [default_server_config(timeout=120)]

    async def setup(self) -> None:
        self.tasks = load_rows(
            self.config.dataset_name or str(TASKS_PATH), self.config.dataset_split, self.config.prompt_field
        )
        for task in self.tasks:
            missing = [k for k in ("id", "check") if k not in task]
            if missing:
                raise ValueError(f"task {task.get('id', '?')!r} in {self.config.dataset_name} lacks {missing}")
        self.order = list(range(len(self.tasks)))
        random.Random(self.config.seed).shuffle(self.order)
        self.cursor = 0
        logger.info("terminal_tasks: %d tasks from %s", len(self.tasks), self.config.dataset_name)

    async def get_next_item(self) -> dict[str, Any]:
        task = self.tasks[self.order[self.cursor % len(self.order)]]
        self.cursor += 1
        return task

    def format_prompt(self, item: dict[str, Any]) -> str:
        return str(item[self.config.prompt_field])

    async def setup_trajectory_workspace(self, item: dict[str, Any], trajectory_id: str, exec_tool: Any) -> None:
        setup = item.get("setup")
        if setup:
            result = await exec_tool.terminal(setup, timeout=self.config.check_timeout)
            if not result.ok:
                raise RolloutFailed(
                    f"setup of task {item['id']!r} failed (exit {result.exit_code}): {result.output[-500:]}"
                )

    async def compute_reward(self, item: dict[str, Any], result: AgentResult, ctx: Any) -> float:
        check = await ctx.terminal(item["check"], timeout=self.config.check_timeout)
        return 1.0 if check.ok else 0.0

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        """Every task once; success rate and agent statistics, saved with evaluate_log."""
        if not hasattr(self, "tasks"):
            await self.setup()
        return await self.evaluate_items(self.tasks)
