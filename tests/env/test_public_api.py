"""The import paths the README promises users."""

from __future__ import annotations


def test_top_level_names_resolve_to_the_framework() -> None:
    from hermes_env import (
        AgentResult,
        HermesAgentBaseEnv,
        HermesAgentEnvConfig,
        HermesAgentLoop,
        ToolContext,
        ToolError,
    )
    from hermes_env.agent.loop import AgentResult as A
    from hermes_env.env.base_env import HermesAgentBaseEnv as B
    from hermes_env.env.config import HermesAgentEnvConfig as C
    from hermes_env.tool_context import ToolContext as T

    assert (AgentResult, HermesAgentBaseEnv, HermesAgentEnvConfig, ToolContext) == (A, B, C, T)
    assert HermesAgentLoop.__name__ == "HermesAgentLoop" and ToolError.__name__ == "ToolError"


def test_example_environments_are_base_env_subclasses_with_yaml_beside_them() -> None:
    from hermes_env import HermesAgentBaseEnv
    from hermes_env.environments.bench_eval.env import CONFIG_PATH as BENCH_YAML
    from hermes_env.environments.bench_eval.env import BenchEvalEnv
    from hermes_env.environments.swe_lite.env import CONFIG_PATH as SWE_YAML
    from hermes_env.environments.swe_lite.env import SweLiteEnv
    from hermes_env.environments.terminal_tasks.env import CONFIG_PATH as TT_YAML
    from hermes_env.environments.terminal_tasks.env import TerminalTasksEnv

    for env_cls, yaml_path in [(TerminalTasksEnv, TT_YAML), (SweLiteEnv, SWE_YAML), (BenchEvalEnv, BENCH_YAML)]:
        assert issubclass(env_cls, HermesAgentBaseEnv) and yaml_path.is_file()
        config, servers = env_cls.config_init()
        assert servers[0].server_type == "vllm" and config.use_wandb is False
