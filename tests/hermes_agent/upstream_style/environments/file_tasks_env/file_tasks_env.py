"""FileTasksEnv: inline file-writing tasks checked with ``ctx.terminal`` (hermes-agent's terminal_test style).

Defaults as upstream files set them (a remote backend, a Hub tokenizer, a web toolset, an API key from the
environment); the command line replaces what this machine lacks.
"""

import logging
import os
import sys
import time
from pathlib import Path

_repo_root = Path(__file__).resolve().parent.parent.parent
if str(_repo_root) not in sys.path:
    sys.path.insert(0, str(_repo_root))

from atroposlib.envs.server_handling.server_manager import APIServerConfig  # noqa: E402

from environments.agent_loop import AgentResult  # noqa: E402
from environments.hermes_base_env import HermesAgentBaseEnv, HermesAgentEnvConfig  # noqa: E402
from environments.tool_context import ToolContext  # noqa: E402

logger = logging.getLogger(__name__)

TASKS = [
    {"prompt": "Write the word ready into ~/status.txt", "path": "~/status.txt", "expected": "ready"},
    {"prompt": "Write the product of 12 and 12 into ~/product.txt", "path": "~/product.txt", "expected": "144"},
]
EVAL_TASKS = [{"prompt": "Say the capital of France.", "expected": "Paris"}]


class FileTasksConfig(HermesAgentEnvConfig):
    pass


class FileTasksEnv(HermesAgentBaseEnv):
    name = "file-tasks"
    env_config_cls = FileTasksConfig

    @classmethod
    def config_init(cls) -> tuple[FileTasksConfig, list[APIServerConfig]]:
        env_config = FileTasksConfig(
            enabled_toolsets=["terminal", "file", "web"],
            disabled_toolsets=None,
            distribution=None,
            max_agent_turns=6,
            max_token_length=512,
            agent_temperature=1.0,
            system_prompt="You are a careful assistant with a terminal.",
            terminal_backend="modal",
            group_size=2,
            tokenizer_name="NousResearch/DeepHermes-3-Llama-3-3B-Preview",
            tool_call_parser="hermes",
            steps_per_eval=2,
            total_steps=2,
            use_wandb=False,
            ensure_scores_are_not_same=False,
            dataset_name=None,
        )
        server_configs = [
            APIServerConfig(
                base_url="https://openrouter.ai/api/v1",
                model_name="anthropic/claude-opus-4.6",
                server_type="openai",
                api_key=os.getenv("FILE_TASKS_API_KEY", ""),
                health_check=False,
            )
        ]
        return env_config, server_configs

    async def setup(self):
        self.iter = 0
        self.reward_buffer: list[float] = []
        # Upstream's base env sets these for its tools; they say what this run was given.
        logger.info("backend=%s timeout=%s", os.environ["TERMINAL_ENV"], os.environ["TERMINAL_TIMEOUT"])

    async def get_next_item(self) -> dict[str, str]:
        item = TASKS[self.iter % len(TASKS)]
        self.iter += 1
        return item

    def format_prompt(self, item: dict[str, str]) -> str:
        return item["prompt"]

    async def compute_reward(self, item: dict[str, str], result: AgentResult, ctx: ToolContext) -> float:
        assert isinstance(result.turns_used, int) and result.finished_naturally is not None
        check = ctx.terminal(f"cat {item['path']}")
        if check["exit_code"] != 0:
            self.reward_buffer.append(0.0)
            return 0.0
        reward = 1.0 if check.get("output", "").strip() == item["expected"] else 0.0
        self.reward_buffer.append(reward)
        return reward

    async def evaluate(self, *args, **kwargs):
        start = time.time()
        correct = 0
        samples = []
        for task in EVAL_TASKS:
            completion = await self.server.chat_completion(
                messages=[{"role": "user", "content": task["prompt"]}],
                n=1,
                max_tokens=self.config.max_token_length,
                temperature=0.0,
                split="eval",
            )
            answer = completion.choices[0].message.content or ""
            correct += task["expected"] in answer
            samples.append({"prompt": task["prompt"], "response": answer})
        await self.evaluate_log(
            metrics={"eval/accuracy": correct / len(EVAL_TASKS)},
            samples=samples,
            start_time=start,
            end_time=time.time(),
        )

    async def wandb_log(self, wandb_metrics: dict | None = None):
        wandb_metrics = dict(wandb_metrics or {})
        if self.reward_buffer:
            wandb_metrics["train/avg_reward"] = sum(self.reward_buffer) / len(self.reward_buffer)
            self.reward_buffer = []
        await super().wandb_log(wandb_metrics)


if __name__ == "__main__":
    FileTasksEnv.cli()
