"""terminal_tasks: shell and file tasks whose result a shell check verifies inside the sandbox.

Each row of ``tasks.jsonl`` has ``id``, ``prompt``, ``setup`` (a shell command that prepares the
workspace, may be empty), ``check`` (a shell command that exits 0 when the task is done) and
``solution`` (a reference command, used by the scripted demo policy and the tests). A row may
name the container image its rollouts run in with ``terminal_backend: docker``: ``dockerfile``
(a recipe under ``images/``, built once on top of the base image) or ``image`` (an image name);
other backends skip those rows. The reward is 1.0 when ``check`` passes in the rollout's own
workspace after the model stops, else 0.0.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field, field_validator

from hermes_env.agent.loop import AgentResult
from hermes_env.env.config import HermesAgentEnvConfig, json_option
from hermes_env.environments._common import TaskFileEnv
from hermes_env.errors import EnvSetupError

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
    group_size: int = Field(default=4, ge=1, description="Rollouts per task in a group.")
    total_steps: int = Field(default=8, description="process: groups written; serve: trainer steps.")
    max_token_length: int = Field(default=8192, ge=1, description="Most tokens of one rollout.")
    max_agent_turns: int = Field(default=8, ge=1, description="Model turns per rollout.")
    max_tokens_per_turn: int | None = Field(default=1024, ge=1, description="max_tokens of each model call.")
    terminal_timeout: float = Field(default=30.0, gt=0, description="Time limit of one tool call, in seconds.")
    rollout_timeout: float = Field(default=300.0, gt=0, description="Wall-clock budget of one rollout, in seconds.")
    check_timeout: float = Field(default=30.0, gt=0, description="Time limit of a task's check, in seconds.")
    # `| str`: atroposlib's command line passes it as one JSON string, parsed below.
    example_turns: list[dict[str, Any]] | str | None = Field(
        default=None,
        description="Messages put between the system prompt and every task (JSON list on the command line): a "
        "worked tool-call exchange shows a small model the format. They are prompt, never trained (Phase 2 only).",
    )

    @field_validator("example_turns", mode="before")
    @classmethod
    def _parse_example_turns(cls, value: Any) -> Any:
        value = json_option(value, "example_turns must be a JSON list of chat messages")
        if value is not None and (
            not isinstance(value, list) or not all(isinstance(m, dict) and "role" in m for m in value)
        ):
            raise ValueError("example_turns must be a list of chat messages, each a dict with a 'role'")
        return value


class TerminalTasksEnv(TaskFileEnv):
    name = "terminal_tasks"
    env_config_cls = TerminalTasksConfig
    config: TerminalTasksConfig
    default_tasks_path = TASKS_PATH
    required_fields = ("id", "check")

    async def setup(self) -> None:
        await super().setup()
        if self.config.example_turns and self.phase == "openai":
            raise EnvSetupError(
                "example_turns work in Phase 2 only: Phase 1 masks train every assistant turn, the examples' too; "
                "drop --env.example_turns or use --openai.server_type vllm"
            )

    def format_prompt(self, item: dict[str, Any]) -> str | list[dict[str, Any]]:
        task = super().format_prompt(item)
        if not self.config.example_turns:
            return task
        return [*(dict(m) for m in self.config.example_turns), {"role": "user", "content": task}]

    async def setup_trajectory_workspace(self, item: dict[str, Any], trajectory_id: str, exec_tool: Any) -> None:
        await self.run_setup_command(item, exec_tool, timeout=self.config.check_timeout)

    async def compute_reward(self, item: dict[str, Any], result: AgentResult, ctx: Any) -> float:
        check = await ctx.terminal(item["check"], timeout=self.config.check_timeout)
        return 1.0 if check.ok else 0.0
