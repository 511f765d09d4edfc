"""Toolsets, get_tool_definitions and distributions against hermes-agent's own tables (tests/data/hermes_agent)."""

from __future__ import annotations

import json
import logging
import random
from pathlib import Path

import pytest
from hermes_env.errors import ToolsetUnavailableError
from hermes_env.tools import (
    DISTRIBUTIONS,
    REGISTRY,
    TOOLSETS,
    get_distribution,
    get_tool_definitions,
    register_distribution,
    resolve_toolset,
    resolve_toolsets,
    sample_toolsets_from_distribution,
)
from hermes_env.tools import distributions as dist_module

DATA = Path(__file__).resolve().parents[1] / "data" / "hermes_agent"
UPSTREAM = json.loads((DATA / "toolsets.json").read_text())
SCHEMAS = json.loads((DATA / "tool_schemas.json").read_text())


def test_the_17_distributions_are_hermes_agents() -> None:
    assert DISTRIBUTIONS == UPSTREAM["distributions"]
    assert len(DISTRIBUTIONS) == 17


@pytest.mark.parametrize("name", sorted(UPSTREAM["toolsets"]))
def test_every_hermes_agent_toolset_resolves_to_its_tools(name: str) -> None:
    spec = UPSTREAM["toolsets"][name]
    expected = set(spec["tools"])
    for included in spec["includes"]:
        expected.update(resolve_toolset(included))
    assert set(resolve_toolset(name)) == expected
    assert TOOLSETS[name].description == spec["description"]


@pytest.mark.parametrize("name", sorted(SCHEMAS["schemas"]))
def test_offline_tools_carry_hermes_agents_schema(name: str) -> None:
    if name == "execute_code" and name not in REGISTRY:
        pytest.skip("execute_code is registered by hermes_env.tools.code_execution_tool")
    assert REGISTRY.get(name).schema == {"type": "function", "function": SCHEMAS["schemas"][name]}


def test_get_tool_definitions_like_model_tools() -> None:
    names = [t["function"]["name"] for t in get_tool_definitions(enabled_toolsets=["terminal", "file"])]
    assert names == ["patch", "process", "read_file", "search_files", "terminal", "write_file"]  # sorted, as upstream
    assert [t["function"]["name"] for t in get_tool_definitions(["terminal"], ["terminal"])] == []
    everything = [t["function"]["name"] for t in get_tool_definitions()]
    assert {"terminal", "process", "todo", "read_file"} <= set(everything)
    assert not {"web_search", "browser_click", "terminal_stateful"} & set(everything)


@pytest.mark.parametrize("toolset", ["web", "browser", "vision", "image_gen", "moa", "memory", "clarify"])
def test_network_toolsets_are_a_clear_error_not_a_silent_drop(toolset: str) -> None:
    with pytest.raises(ToolsetUnavailableError, match=f"toolset\\(s\\) '{toolset}' include tools hermes_env cannot"):
        get_tool_definitions([toolset])
    with pytest.raises(ToolsetUnavailableError):
        resolve_toolsets(["terminal", toolset])


def test_disabling_the_unavailable_part_of_a_composite_toolset() -> None:
    assert resolve_toolsets(["debugging"], ["web"]) == ["debugging"]
    names = [t["function"]["name"] for t in get_tool_definitions(["debugging"], ["web"])]
    assert names == ["patch", "process", "read_file", "search_files", "terminal", "write_file"]


def test_unknown_toolsets_name_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="unknown toolset\\(s\\) in enabled_toolsets: 'nope'; valid toolsets: web"):
        resolve_toolsets(["nope"])


def test_sampling_uses_upstream_weights_over_the_available_toolsets(caplog: pytest.LogCaptureFixture) -> None:
    dist_module._warned.clear()
    rng = random.Random(7)
    with caplog.at_level(logging.WARNING, logger="hermes_env.tools.distributions"):
        draws = [sample_toolsets_from_distribution("development", rng) for _ in range(2000)]
        sample_toolsets_from_distribution("development", rng)
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and "'development': toolset(s) moa, web, vision cannot be offered" in warnings[0]
    assert all(set(d) <= {"terminal", "file"} and d for d in draws)
    rate = sum("terminal" in d for d in draws) / len(draws)
    assert 0.75 < rate < 0.90  # 80 of 100 (+ the forced pick when the draw comes out empty)


def test_register_distribution_takes_percent_weights() -> None:
    register_distribution("mine", {"terminal": 100, "todo": 25}, replace=True)
    assert get_distribution("mine")["toolsets"] == {"terminal": 100, "todo": 25}
    with pytest.raises(ValueError, match="weight of 'todo' must be a number in \\[0, 100\\]"):
        register_distribution("bad", {"todo": 250})
    with pytest.raises(ValueError, match="unknown toolset"):
        register_distribution("bad", {"nope": 50})
    DISTRIBUTIONS.pop("mine")


def test_toolset_helpers_answer_like_hermes_agents() -> None:
    from hermes_env.tools import get_all_toolsets, get_toolset, get_toolset_names, resolve_multiple_toolsets

    for name, spec in UPSTREAM["toolsets"].items():
        assert get_toolset(name) == spec and get_all_toolsets()[name] == spec
    assert get_toolset("nope") is None
    assert set(UPSTREAM["toolsets"]) <= set(get_toolset_names())
    assert resolve_multiple_toolsets(["terminal", "file"]) == sorted(
        {"terminal", "process", "read_file", "write_file", "patch", "search_files"}
    )
