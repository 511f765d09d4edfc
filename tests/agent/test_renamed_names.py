"""Old names of things renamed so that each name means one thing: still importable, warning once.

``hermes_env.agent.steps.ToolCall`` is now ``AgentToolCall`` (``hermes_env.parsers.ToolCall`` is the
parser's call); ``hermes_env.slot_pool.ToolResult`` is ``ExecResult`` (``agent_env.ToolResult`` is the
AgentEnv result).
"""

from __future__ import annotations

import importlib
import warnings

import pytest
from hermes_env import _renamed


@pytest.mark.parametrize(
    ("module", "old", "new_module", "new"),
    [
        ("hermes_env.agent.steps", "ToolCall", "hermes_env.agent.steps", "AgentToolCall"),
        ("hermes_env.slot_pool", "ToolResult", "hermes_env.isolation.result", "ExecResult"),
        ("hermes_env.slot_pool.protocol", "ToolResult", "hermes_env.isolation.result", "ExecResult"),
    ],
)
def test_an_old_name_gives_the_new_thing_and_warns_once(
    module: str, old: str, new_module: str, new: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_renamed, "_warned", set())
    target = getattr(importlib.import_module(new_module), new)
    said = rf"{module}\.{old} is now {new_module}\.{new}: import {new} from {new_module}"
    with pytest.warns(DeprecationWarning, match=said):
        assert getattr(importlib.import_module(module), old) is target
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert getattr(importlib.import_module(module), old) is target


def test_the_compatibility_fronts_keep_upstreams_names_without_a_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from hermes_env.agent.steps import AgentToolCall, ToolResult
        from hermes_env.agent_env import ToolCall as AgentEnvToolCall
        from hermes_env.agent_env import ToolResult as AgentEnvToolResult
        from hermes_env.hermes_agent.atropos.tools import ToolCall as UpstreamToolCall

    assert AgentEnvToolCall is AgentToolCall is UpstreamToolCall and AgentEnvToolResult is ToolResult


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    import hermes_env.slot_pool

    with pytest.raises(AttributeError, match="has no attribute 'Nothing'"):
        _ = hermes_env.slot_pool.Nothing  # type: ignore[attr-defined]
