"""LiteBenchEnv: a lighter Terminal-Bench 2 in hermes-agent's tblite style.

Everything comes from ``TerminalBench2EvalEnv`` (imported from its upstream path, so that the ported file runs
on hermes_env's own Terminal-Bench 2 environment); only the dataset, the task time limit, the name and the
defaults differ.
"""

import os
import sys
from pathlib import Path

_repo_root = Path(__file__).resolve().parent.parent.parent.parent
if str(_repo_root) not in sys.path:
    sys.path.insert(0, str(_repo_root))

from atroposlib.envs.base import EvalHandlingEnum  # noqa: E402
from atroposlib.envs.server_handling.server_manager import APIServerConfig  # noqa: E402
from pydantic import Field  # noqa: E402

from environments.benchmarks.terminalbench_2.terminalbench2_env import (  # noqa: E402
    TerminalBench2EvalConfig,
    TerminalBench2EvalEnv,
)


class LiteBenchConfig(TerminalBench2EvalConfig):
    dataset_name: str = Field(default="example-org/lite-bench", description="Hub dataset of the lite tasks.")
    task_timeout: int = Field(default=600, description="Lite tasks are quick.")


class LiteBenchEnv(TerminalBench2EvalEnv):
    name = "lite-bench"
    env_config_cls = LiteBenchConfig

    @classmethod
    def config_init(cls):
        env_config = LiteBenchConfig(
            enabled_toolsets=["terminal", "file"],
            max_agent_turns=8,
            max_token_length=2048,
            agent_temperature=0.6,
            terminal_backend="modal",
            terminal_timeout=120,
            test_timeout=120,
            eval_handling=EvalHandlingEnum.STOP_TRAIN,
            group_size=1,
            steps_per_eval=1,
            total_steps=1,
            tokenizer_name="example-org/some-tokenizer",
            use_wandb=False,
            wandb_name="lite-bench",
            ensure_scores_are_not_same=False,
        )
        server_configs = [
            APIServerConfig(
                base_url="https://inference.example.invalid/v1",
                model_name="example-model",
                server_type="openai",
                api_key=os.getenv("LITE_BENCH_API_KEY", ""),
                health_check=False,
            )
        ]
        return env_config, server_configs


if __name__ == "__main__":
    LiteBenchEnv.cli()
