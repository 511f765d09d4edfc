"""swe_lite: fix a bug in a small Python repository; the reward is the hidden tests, run in the sandbox.

Each row of ``tasks.jsonl`` names a repository (``repo``), its hidden tests (``hidden_tests``), the
issue text and the ``test_command`` (paths relative to this folder). A rollout's workspace
starts as a copy of the repository (``setup_trajectory_workspace``); the hidden tests are
uploaded only after the model stops, replacing anything the model put at that path, and
``test_command`` decides the reward (1.0 when every hidden test passes).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from pydantic import Field

from hermes_env.agent.loop import AgentResult
from hermes_env.env.config import HermesAgentEnvConfig
from hermes_env.environments._common import TaskFileEnv
from hermes_env.errors import DatasetError, RolloutFailed

logger = logging.getLogger(__name__)

HERE = Path(__file__).resolve().parent
TASKS_PATH = HERE / "tasks.jsonl"
CONFIG_PATH = HERE / "config.yaml"
HIDDEN_DIR = "hidden_tests"

SYSTEM_PROMPT = (
    "You are a software engineer working in a Python repository (your current directory). Read the code, "
    "fix the bug with the tools, and reply with a short summary and no tool call when you are done."
)


class SweLiteConfig(HermesAgentEnvConfig):
    dataset_name: str | None = Field(default=str(TASKS_PATH), description="Task index (.jsonl).")
    system_prompt: str | None = Field(default=SYSTEM_PROMPT, description="System message.")
    group_size: int = Field(default=4, ge=1, description="Rollouts per task in a group.")
    total_steps: int = Field(default=8, description="process: groups written; serve: trainer steps.")
    max_token_length: int = Field(default=16384, ge=1, description="Most tokens of one rollout.")
    max_agent_turns: int = Field(default=16, ge=1, description="Model turns per rollout.")
    enabled_toolsets: list[str] | str | None = Field(
        default_factory=lambda: ["terminal", "file"], description="Toolsets offered to the model."
    )
    terminal_timeout: float = Field(default=60.0, gt=0, description="Time limit of one tool call, in seconds.")
    rollout_timeout: float = Field(default=900.0, gt=0, description="Wall-clock budget of one rollout, in seconds.")
    test_timeout: float = Field(default=60.0, gt=0, description="Time limit of the hidden test run, in seconds.")
    tasks_root: str = Field(
        default=str(HERE), description="Folder the index's repo/hidden_tests paths are relative to."
    )


class SweLiteEnv(TaskFileEnv):
    name = "swe_lite"
    env_config_cls = SweLiteConfig
    config: SweLiteConfig
    default_tasks_path = TASKS_PATH
    required_fields = ("id", "repo", "hidden_tests", "test_command")
    server_timeout = 300

    def _path(self, relative: str) -> Path:
        return (Path(self.config.tasks_root) / relative).resolve()

    def validate_task(self, task: dict[str, Any]) -> None:
        for key in ("repo", "hidden_tests"):
            if not self._path(task[key]).is_dir():
                raise DatasetError(
                    f"swe_lite task {task['id']!r}: {key} folder {self._path(task[key])} does not exist; "
                    "check --env.tasks_root"
                )

    async def setup_trajectory_workspace(self, item: dict[str, Any], trajectory_id: str, exec_tool: Any) -> None:
        uploaded = await exec_tool.upload_dir(self._path(item["repo"]), ".")
        if not uploaded:
            raise RolloutFailed(f"swe_lite task {item['id']!r}: repository {item['repo']} is empty; add its files")

    async def compute_reward(self, item: dict[str, Any], result: AgentResult, ctx: Any) -> float:
        # Whatever the model left at hidden_tests/ is replaced by the real tests.
        await ctx.terminal(f"rm -rf {HIDDEN_DIR}", timeout=30)
        await ctx.upload_dir(self._path(item["hidden_tests"]), HIDDEN_DIR)
        run = await ctx.terminal(item["test_command"], timeout=self.config.test_timeout)
        if not run.ok:
            logger.debug("swe_lite %s: hidden tests failed:\n%s", item["id"], run.output[-2000:])
        return 1.0 if run.ok else 0.0
