"""An environment written the way hermes-agent users write them, running on hermes_env unchanged.

Ported from hermes-agent's ``environments/terminal_test_env``: inline tasks ask the model to
create a file with given content; ``compute_reward`` checks it through the rollout's ToolContext
with hermes-agent's synchronous calls and dict results (``ctx.terminal(...)["exit_code"]``, no
``await``). Tools come from hermes-agent's ``terminal_tasks`` distribution (terminal and file
almost always; its web, browser, vision and image toolsets cannot run offline and are left out of
the draw, with one warning). The only lines that differ from an upstream environment are the
imports (``hermes_env`` instead of ``environments.*``) and the demo entry point.

    python examples/upstream_style_env.py demo --out data/upstream_style.jsonl   # scripted policy, no model
    python examples/upstream_style_env.py process --openai.base_url http://localhost:9000/v1 ...
"""

from __future__ import annotations

import sys
from typing import Any

from atroposlib.envs.server_handling.server_manager import APIServerConfig
from hermes_env import AgentResult, HermesAgentBaseEnv, HermesAgentEnvConfig, ToolContext
from hermes_env.env.defaults import DEFAULT_BASE_URL, DEFAULT_MODEL, default_tokenizer_name

# `solution` is the reference command the scripted demo policy uses; the environment never reads it.
TRAIN_TASKS = [
    {
        "id": "greeting",
        "prompt": "Create a file at ~/greeting.txt containing exactly the text: Hello from Hermes Agent",
        "verify_path": "~/greeting.txt",
        "expected_content": "Hello from Hermes Agent",
        "solution": "printf 'Hello from Hermes Agent' > ~/greeting.txt",
    },
    {
        "id": "count",
        "prompt": "Create a file at ~/count.txt containing the numbers 1 through 5, one per line",
        "verify_path": "~/count.txt",
        "expected_content": "1\n2\n3\n4\n5",
        "solution": "seq 1 5 > ~/count.txt",
    },
    {
        "id": "answer",
        "prompt": "Create a file at ~/answer.txt containing the result of 123 + 456",
        "verify_path": "~/answer.txt",
        "expected_content": "579",
        "solution": "echo $((123 + 456)) > ~/answer.txt",
    },
]
EVAL_TASKS = [
    {
        "id": "result",
        "prompt": "Create a file at ~/result.txt containing the result of 6 * 7",
        "verify_path": "~/result.txt",
        "expected_content": "42",
        "solution": "echo $((6 * 7)) > ~/result.txt",
    },
]


class UpstreamStyleEnv(HermesAgentBaseEnv):
    """File-creation tasks; the verifier cats the file in the rollout's own terminal."""

    name = "upstream-style"
    env_config_cls = HermesAgentEnvConfig

    @classmethod
    def config_init(cls) -> tuple[HermesAgentEnvConfig, list[APIServerConfig]]:
        env_config = HermesAgentEnvConfig(
            distribution="terminal_tasks",
            max_agent_turns=6,
            max_token_length=8192,
            max_tokens_per_turn=1024,
            agent_temperature=1.0,
            system_prompt=(
                "You are a helpful assistant with access to a terminal and file tools. "
                "Complete the user's request by using the available tools. "
                "Be precise and follow instructions exactly."
            ),
            terminal_backend="bwrap",
            group_size=4,
            total_steps=3,
            tokenizer_name=default_tokenizer_name(),
            tool_call_parser="hermes",
            ensure_scores_are_not_same=False,
            include_messages=True,
            use_wandb=False,
            wandb_name="upstream-style",
        )
        server_configs = [
            APIServerConfig(
                base_url=DEFAULT_BASE_URL,
                model_name=DEFAULT_MODEL,
                tokenizer_name=default_tokenizer_name(),
                server_type="vllm",
                api_key="x",
            )
        ]
        return env_config, server_configs

    async def setup(self) -> None:
        self.train_tasks = list(TRAIN_TASKS)
        self.eval_tasks = list(EVAL_TASKS)
        self.iter = 0

    async def get_next_item(self) -> dict[str, str]:
        item = self.train_tasks[self.iter % len(self.train_tasks)]
        self.iter += 1
        return item

    def format_prompt(self, item: dict[str, str]) -> str:
        return item["prompt"]

    async def compute_reward(self, item: dict[str, str], result: AgentResult, ctx: ToolContext) -> float:
        # hermes-agent's verifier, as written upstream: synchronous ToolContext calls, dict results.
        cat = ctx.terminal(f"cat {item['verify_path']}")
        if cat["exit_code"] != 0:
            return 0.0
        return 1.0 if cat["output"].strip() == item["expected_content"].strip() else 0.0

    async def evaluate(self, *args: Any, **kwargs: Any) -> None:
        await self.evaluate_items(self.eval_tasks)


def main() -> None:
    from hermes_env.env.cli import run_cli
    from hermes_env.environments import configure_logging

    configure_logging()
    if len(sys.argv) > 1 and sys.argv[1] == "demo":
        from hermes_env.testing.demo import run_demo

        run_demo(
            UpstreamStyleEnv,
            sys.argv[2:],
            prog="python examples/upstream_style_env.py demo",
            description="Run `process` against a SCRIPTED vLLM /generate policy (no model) and write scored groups.",
            tasks=TRAIN_TASKS + EVAL_TASKS,
            default_out="data/upstream_style_demo.jsonl",
            default_groups=6,
        )
    else:
        run_cli(UpstreamStyleEnv, extra_commands={"demo": "run process against a scripted policy server (no model)"})


if __name__ == "__main__":
    main()
