"""HermesAgentEnvConfig validation and dataset loading: every bad input gets a message saying what to fix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hermes_env.env.config import HermesAgentEnvConfig
from hermes_env.env.dataset import load_rows
from hermes_env.errors import DatasetError
from pydantic import ValidationError


def test_defaults_are_valid_and_extend_base_env_config() -> None:
    config = HermesAgentEnvConfig()
    # hermes-agent's defaults: 30 turns, 120 s per tool call, 128 tool calls in flight, an hour of idle lifetime.
    assert (config.max_agent_turns, config.terminal_timeout, config.tool_pool_size) == (30, 120.0, 128)
    assert config.terminal_lifetime == 3600 and config.tool_call_parser is None and config.phase == "auto"
    assert config.group_size == 4  # inherited from atroposlib's BaseEnvConfig


def test_distribution_and_enabled_toolsets_are_exclusive() -> None:
    with pytest.raises(ValidationError, match="either enabled_toolsets or distribution, not both"):
        HermesAgentEnvConfig(enabled_toolsets=["terminal"], distribution="default")


def test_unknown_toolset_names_the_valid_ones() -> None:
    with pytest.raises(ValidationError, match=r"unknown toolset\(s\) in enabled_toolsets: 'termnal'.*terminal"):
        HermesAgentEnvConfig(enabled_toolsets=["termnal"])
    with pytest.raises(ValidationError, match="disabled_toolsets: 'nope'"):
        HermesAgentEnvConfig(disabled_toolsets=["nope"])


def test_unknown_distribution_names_the_valid_ones() -> None:
    with pytest.raises(ValidationError, match="unknown toolset distribution 'nope'; valid distributions: default"):
        HermesAgentEnvConfig(distribution="nope")


def test_distribution_fully_disabled_is_rejected() -> None:
    with pytest.raises(ValidationError, match="distribution 'terminal_only' can draw no toolset here"):
        HermesAgentEnvConfig(distribution="terminal_only", disabled_toolsets=["terminal", "file"])
    with pytest.raises(ValidationError, match="distribution 'minimal' can draw no toolset here"):
        HermesAgentEnvConfig(distribution="minimal")  # web only: needs the network


def test_upstream_distribution_names_are_accepted() -> None:
    for name in ("development", "terminal_tasks", "research", "science", "balanced", "mixed_tasks"):
        assert HermesAgentEnvConfig(distribution=name).distribution == name


def test_network_toolsets_are_refused_with_the_reason() -> None:
    with pytest.raises(ValidationError, match="'browser' include tools hermes_env cannot offer offline"):
        HermesAgentEnvConfig(enabled_toolsets=["terminal", "browser"])
    assert HermesAgentEnvConfig(enabled_toolsets=["web"], tool_server_url="http://127.0.0.1:1").tool_server_url


def test_comma_separated_toolsets_from_the_command_line() -> None:
    assert HermesAgentEnvConfig(enabled_toolsets="terminal, file").enabled_toolsets == ["terminal", "file"]


@pytest.mark.parametrize(
    ("field", "value"),
    [("max_agent_turns", 0), ("tool_pool_size", 0), ("terminal_timeout", 0), ("rollout_timeout", -1)],
)
def test_out_of_range_numbers(field: str, value: float) -> None:
    with pytest.raises(ValidationError, match=field):
        HermesAgentEnvConfig(**{field: value})


def test_missing_dataset_file_is_reported_at_config_time(tmp_path: Path) -> None:
    missing = tmp_path / "nope.jsonl"
    with pytest.raises(ValidationError, match=r"dataset .*nope.jsonl' not found.*--env.dataset_name"):
        HermesAgentEnvConfig(dataset_name=str(missing))


def test_load_rows_jsonl_and_json(tmp_path: Path) -> None:
    jsonl = tmp_path / "d.jsonl"
    jsonl.write_text('{"prompt": "a"}\n\n{"prompt": "b", "x": 1}\n')
    assert [r["prompt"] for r in load_rows(str(jsonl))] == ["a", "b"]
    js = tmp_path / "d.json"
    js.write_text(json.dumps({"train": [{"q": "1"}], "test": [{"q": "2"}]}))
    assert load_rows(str(js), split="test", prompt_field="q") == [{"q": "2"}]
    with pytest.raises(DatasetError, match="no split 'dev'"):
        load_rows(str(js), split="dev", prompt_field="q")


def test_load_rows_bad_inputs(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "a"}\n{"prompt": \n')
    with pytest.raises(DatasetError, match=r"bad.jsonl:2: not valid JSON"):
        load_rows(str(bad))
    nofield = tmp_path / "nofield.jsonl"
    nofield.write_text('{"question": "a"}\n')
    with pytest.raises(DatasetError, match=r"row 0 has no field 'prompt' \(fields: \['question'\]\).*prompt_field"):
        load_rows(str(nofield))
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(DatasetError, match="has no rows"):
        load_rows(str(empty))
    with pytest.raises(DatasetError, match="not found"):
        load_rows(str(tmp_path / "missing.jsonl"))


def test_unknown_tool_call_parser_lists_the_available_ones() -> None:
    with pytest.raises(ValidationError, match="unknown tool_call_parser 'hermess'; available parsers: .*hermes"):
        HermesAgentEnvConfig(tool_call_parser="hermess")
    assert HermesAgentEnvConfig(tool_call_parser="qwen3_xml").tool_call_parser == "qwen3_xml"


def test_local_folder_and_parquet_datasets_load_as_datasets_reads_them(tmp_path: Path) -> None:
    # A local copy of a Hub dataset (data/<split>-*.parquet) stands in for its name; so does one parquet file.
    import pandas as pd

    folder = tmp_path / "hub_copy"
    (folder / "data").mkdir(parents=True)
    pd.DataFrame([{"prompt": "a", "n": 1}, {"prompt": "b", "n": 2}]).to_parquet(folder / "data" / "test-0.parquet")
    HermesAgentEnvConfig(dataset_name=str(folder))  # accepted at config time
    assert [r["prompt"] for r in load_rows(str(folder), split="test")] == ["a", "b"]
    assert load_rows(str(folder / "data" / "test-0.parquet"), split="train")[1]["n"] == 2
    with pytest.raises(DatasetError, match="split 'train'"):
        load_rows(str(folder), split="train")


@pytest.mark.parametrize("source", ["cli", "yaml"])
def test_a_misspelt_backend_option_stops_the_command_at_load(tmp_path: Path, source: str) -> None:
    options = '{"slots_per_workr": 3}'
    if source == "cli":
        args = ["--env.terminal_backend", "sandbox", "--env.terminal_backend_options", options]
    else:
        config = tmp_path / "config.yaml"
        config.write_text(f"env:\n  terminal_backend: sandbox\n  terminal_backend_options: {options}\n")
        args = ["--config", str(config)]
    proc = subprocess.run(
        [sys.executable, "-m", "hermes_env.environments.terminal_tasks", "process", *args],
        capture_output=True, text=True, timeout=300, check=False, env={**os.environ, "WANDB_MODE": "disabled"},
    )  # fmt: skip
    assert proc.returncode != 0
    assert "terminal_backend_options.slots_per_workr: backend 'sandbox' does not accept option" in proc.stderr
    assert "valid options: " in proc.stderr and "slots_per_worker" in proc.stderr
    assert "Traceback" not in proc.stderr
