"""CodeTasksEnv: coding tasks from a dataset, scored by running each row's test in the rollout's sandbox
(hermes-agent's hermes_swe_env style). Both a distribution and enabled_toolsets are set: the distribution wins.
"""

import logging
import sys
from pathlib import Path
from typing import Any

_repo_root = Path(__file__).resolve().parent.parent.parent
if str(_repo_root) not in sys.path:
    sys.path.insert(0, str(_repo_root))

from atroposlib.envs.server_handling.server_manager import APIServerConfig  # noqa: E402
from datasets import load_dataset  # noqa: E402
from model_tools import get_tool_definitions  # noqa: E402
from toolset_distributions import get_distribution  # noqa: E402

from environments.agent_loop import AgentResult  # noqa: E402
from environments.hermes_base_env import HermesAgentBaseEnv, HermesAgentEnvConfig  # noqa: E402
from environments.tool_context import ToolContext  # noqa: E402

logger = logging.getLogger(__name__)


class CodeTasksConfig(HermesAgentEnvConfig):
    pass


class CodeTasksEnv(HermesAgentBaseEnv):
    name = "code-tasks"
    env_config_cls = CodeTasksConfig

    @classmethod
    def config_init(cls) -> tuple[CodeTasksConfig, list[APIServerConfig]]:
        env_config = CodeTasksConfig(
            enabled_toolsets=["terminal", "file", "web"],
            distribution="terminal_only",
            max_agent_turns=8,
            max_token_length=1024,
            terminal_backend="daytona",
            dataset_name="someone/code-tasks",
            dataset_split="test",
            prompt_field="prompt",
            group_size=2,
            tokenizer_name="NousResearch/DeepHermes-3-Llama-3-3B-Preview",
            total_steps=2,
            use_wandb=False,
        )
        server_configs = [APIServerConfig(base_url="http://localhost:8000/v1", model_name="m", server_type="openai")]
        return env_config, server_configs

    async def setup(self):
        assert get_distribution(self.config.distribution) is not None
        schemas = get_tool_definitions(enabled_toolsets=["terminal", "web"], quiet_mode=True)
        assert [s["function"]["name"] for s in schemas] == ["process", "terminal"], schemas
        self.dataset = load_dataset(self.config.dataset_name, split=self.config.dataset_split)
        self.iter = 0

    async def get_next_item(self) -> dict[str, Any]:
        item = self.dataset[self.iter % len(self.dataset)]
        self.iter += 1
        return item

    def format_prompt(self, item: dict[str, Any]) -> str:
        return f"{item[self.config.prompt_field]}\n\nTests to pass:\n{item['test']}"

    async def compute_reward(self, item: dict[str, Any], result: AgentResult, ctx: ToolContext) -> float:
        tools, valid = self._current_group_tools
        assert "terminal" in valid and "web_search" not in valid, valid
        outcome = ctx.terminal(f'cd /workspace && python3 -c "{item["test"]}"', timeout=60)
        return 1.0 if outcome["exit_code"] == 0 else 0.0

    async def evaluate(self, *args, **kwargs):
        return None


if __name__ == "__main__":
    CodeTasksEnv.cli()
