"""Registry, schemas, argument checking and availability."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from hermes_env.tools import REGISTRY, TOOLSETS, Tool, ToolArgumentError, ToolCallError, ToolRegistry, ToolRunContext
from hermes_env.tools.schema import schema_errors


def test_builtin_tools_and_toolsets_registered() -> None:
    assert REGISTRY.names() == ["patch", "read_file", "search_files", "terminal", "todo", "write_file"]
    assert REGISTRY.toolsets() == {k: sorted(v) for k, v in sorted(TOOLSETS.items())}


@pytest.mark.parametrize("name", ["terminal", "read_file", "write_file", "patch", "search_files", "todo"])
def test_schemas_are_openai_function_tools(name: str) -> None:
    schema = REGISTRY.get(name).schema
    assert schema["type"] == "function"
    fn = schema["function"]
    assert fn["name"] == name and fn["description"]
    params = fn["parameters"]
    assert params["type"] == "object" and params["additionalProperties"] is False
    assert set(params.get("required", [])) <= set(params["properties"])
    for prop in params["properties"].values():
        assert "type" in prop


def test_parallel_safety_flags() -> None:
    assert REGISTRY.get("read_file").parallel_safe and REGISTRY.get("search_files").parallel_safe
    assert not REGISTRY.get("write_file").parallel_safe and not REGISTRY.get("patch").parallel_safe
    assert not REGISTRY.get("terminal").parallel_safe


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({}, "missing required argument 'command'"),
        ({"command": 3}, "command must be string, got an integer"),
        ({"command": "ls", "timeout": "10"}, "timeout must be number, got a string"),
        ({"command": "ls", "timeout": True}, "timeout must be number, got a boolean"),
        ({"command": "ls", "timeout": 0}, "timeout must be >= 1"),
        ({"command": "ls", "cwd": "/"}, "unknown argument(s) 'cwd'"),
        ({"command": ""}, "at least 1 characters"),
        (["ls"], "arguments must be a JSON object, got list"),
    ],
)
def test_argument_errors_are_specific(args: Any, message: str) -> None:
    with pytest.raises(ToolArgumentError) as info:
        REGISTRY.get("terminal").validate(args)
    assert message in str(info.value)


def test_nested_schema_errors_name_the_item() -> None:
    errors = schema_errors(
        {"items": [{"content": "a", "status": "done"}, {"status": "pending"}]},
        REGISTRY.get("todo").parameters,
    )
    assert any("items[0].status must be one of" in e for e in errors)
    assert any("items[1] is missing 'content'" in e for e in errors)


class _NeedsProgram(Tool):
    name = "fancy"
    toolset = "fancyset"
    description = "needs a program that is not installed"
    parameters: ClassVar[dict[str, Any]] = {"type": "object", "properties": {}, "additionalProperties": False}

    def is_available(self) -> bool:
        return False

    async def call(self, args: dict[str, Any], ctx: ToolRunContext) -> str:
        return "ran"


def test_availability_filters_tools_and_unknown_toolsets_error() -> None:
    reg = ToolRegistry()
    reg.register(_NeedsProgram())
    assert reg.tools_for_toolsets(["fancyset"]) == []
    assert [t.name for t in reg.tools_for_toolsets(["fancyset"], available_only=False)] == ["fancy"]
    with pytest.raises(ValueError, match="unknown toolset.*'nope'.*valid toolsets: fancyset"):
        reg.tools_for_toolsets(["nope"])
    with pytest.raises(ValueError, match="already registered"):
        reg.register(_NeedsProgram())
    with pytest.raises(KeyError, match="unknown tool 'x'"):
        reg.get("x")


async def test_dispatch_unknown_tool_is_a_tool_call_error(tmp_path: Any) -> None:
    from hermes_env.backends.local import LocalBackend

    b = LocalBackend(tmp_path)
    ctx = ToolRunContext("t", b)
    with pytest.raises(ToolCallError, match="unknown tool 'rm_rf'; available tools: patch"):
        await REGISTRY.dispatch("rm_rf", {}, ctx)
    await b.aclose()


def test_register_rejects_malformed_tools() -> None:
    class Bad(_NeedsProgram):
        name = "bad"
        parameters: ClassVar[dict[str, Any]] = {"type": "array"}

    with pytest.raises(ValueError, match="type 'object'"):
        ToolRegistry().register(Bad())


def test_run_context_timeout_clamping(tmp_path: Any) -> None:
    from hermes_env.backends.local import LocalBackend

    ctx = ToolRunContext("t", LocalBackend(tmp_path), timeout=30, max_timeout=120)
    assert ctx.clamp_timeout(None) == 30
    assert ctx.clamp_timeout(600) == 120
    assert ctx.clamp_timeout(5) == 5
    with pytest.raises(ValueError, match="max_timeout"):
        ToolRunContext("t", LocalBackend(tmp_path), timeout=30, max_timeout=10)
