"""The shipped examples' defaults have one home, the config class: each ``config.yaml`` loads, names only known
fields, and sets no task default that contradicts the class (only the deployment keys may differ)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from atroposlib.envs.server_handling.server_baseline import APIServerConfig
from hermes_env.environments._common import DEPLOYMENT_KEYS, TaskFileEnv
from hermes_env.environments.bench_eval.env import BenchEvalEnv
from hermes_env.environments.harbor.env import HarborEnv
from hermes_env.environments.swe_lite.env import SweLiteEnv
from hermes_env.environments.terminal_tasks.env import TerminalTasksEnv

ENVS_DIR = Path(__file__).resolve().parents[2] / "python" / "hermes_env" / "environments"
WITH_YAML = [TerminalTasksEnv, SweLiteEnv, BenchEvalEnv]


def test_every_shipped_config_yaml_is_checked() -> None:
    assert sorted(p.parent.name for p in ENVS_DIR.glob("*/config.yaml")) == sorted(e.name for e in WITH_YAML)


@pytest.mark.parametrize("env_cls", WITH_YAML, ids=lambda e: e.name)
def test_config_yaml_agrees_with_the_config_class(env_cls: type[TaskFileEnv]) -> None:
    text = (ENVS_DIR / env_cls.name / "config.yaml").read_text()
    data: dict[str, Any] = yaml.safe_load(text)
    assert set(data) == {"env", "openai"}
    fields = env_cls.env_config_cls.model_fields
    unknown = sorted(set(data["env"]) - set(fields))
    assert not unknown, f"{env_cls.name}/config.yaml sets unknown env fields {unknown}"
    assert not set(data["openai"]) - set(APIServerConfig.model_fields)
    config = env_cls.env_config_cls(**data["env"])  # loads: every value is valid
    default = env_cls.env_config_cls()
    contradicting = {
        key: (value, getattr(default, key))
        for key, value in data["env"].items()
        if key not in DEPLOYMENT_KEYS and getattr(config, key) != getattr(default, key)
    }
    assert not contradicting, f"{env_cls.name}/config.yaml: set these in the config class instead: {contradicting}"


@pytest.mark.parametrize("env_cls", [*WITH_YAML, HarborEnv], ids=lambda e: e.name)
def test_config_init_adds_only_the_run_context(env_cls: type[TaskFileEnv]) -> None:
    config, servers = env_cls.config_init()
    default = env_cls.env_config_cls()
    changed = {k for k in type(config).model_fields if getattr(config, k) != getattr(default, k)}
    assert changed <= {"tokenizer_name", "use_wandb", "wandb_name"}
    assert servers
