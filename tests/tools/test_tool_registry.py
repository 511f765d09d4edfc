"""Registry, schemas, argument checking and availability."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from hermes_env.errors import ToolArgumentError, ToolCallError, ToolsetUnavailableError
from hermes_env.tools import REGISTRY, Tool, ToolCallContext, ToolRegistry, resolve_toolsets, tools_for_toolsets
from hermes_env.tools.schema import schema_errors


def test_builtin_tools_registered() -> None:
    assert {"patch", "process", "read_file", "search_files", "terminal", "todo", "write_file"} <= set(REGISTRY.names())


@pytest.mark.parametrize("name", ["terminal", "process", "read_file", "write_file", "patch", "search_files", "todo"])
def test_schemas_are_openai_function_tools(name: str) -> None:
    schema = REGISTRY.get(name).schema
    assert schema["type"] == "function"
    fn = schema["function"]
    assert fn["name"] == name and fn["description"]
    params = fn["parameters"]
    assert params["type"] == "object"
    assert set(params.get("required", [])) <= set(params["properties"])


def test_parallel_safety_flags() -> None:
    assert REGISTRY.get("read_file").parallel_safe and REGISTRY.get("search_files").parallel_safe
    assert not REGISTRY.get("write_file").parallel_safe and not REGISTRY.get("patch").parallel_safe
    assert not REGISTRY.get("terminal").parallel_safe


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({}, "missing required argument 'command'"),
        ({"command": 3}, "command must be string, got an integer"),
        ({"command": "ls", "timeout": "10"}, "timeout must be integer, got a string"),
        ({"command": "ls", "timeout": True}, "timeout must be integer, got a boolean"),
        (["ls"], "arguments must be a JSON object, got list"),
    ],
)
def test_argument_errors_are_specific(args: Any, message: str) -> None:
    with pytest.raises(ToolArgumentError) as info:
        REGISTRY.get("terminal").validate(args)
    assert message in str(info.value)


def test_hermes_agent_tools_clamp_instead_of_refusing_bounds() -> None:
    # hermes-agent clamps read_file's limit to 2000 and accepts a timeout below its schema minimum.
    assert REGISTRY.get("read_file").validate({"path": "a", "limit": 9000})["limit"] == 9000
    assert REGISTRY.get("terminal").validate({"command": "ls", "timeout": 0, "extra": 1})["timeout"] == 0
    assert REGISTRY.get("patch").validate({"path": "a", "old_string": "x", "new_string": "y"})["mode"] == "replace"


def test_nested_schema_errors_name_the_item() -> None:
    schema = {
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"status": {"type": "string", "enum": ["a", "b"]}},
                    "required": ["status"],
                },
            }
        },
    }
    errors = schema_errors({"items": [{"status": "done"}, {}]}, schema)
    assert any("items[0].status must be one of" in e for e in errors)
    assert any("items[1] is missing 'status'" in e for e in errors)


class _NeedsProgram(Tool):
    name = "fancy"
    toolset = "fancyset"
    description = "needs a program that is not installed"
    parameters: ClassVar[dict[str, Any]] = {"type": "object", "properties": {}, "additionalProperties": False}

    def is_available(self) -> bool:
        return False

    async def call(self, args: dict[str, Any], ctx: ToolCallContext) -> str:
        return "ran"


def test_unavailable_tools_are_errors_when_asked_for() -> None:
    reg = ToolRegistry()
    reg.register(_NeedsProgram())
    assert tools_for_toolsets(["fancyset"], registry=reg) == []
    with pytest.raises(ToolsetUnavailableError, match="fancy: its availability check failed"):
        resolve_toolsets(["fancyset"], registry=reg)
    with pytest.raises(ValueError, match="unknown toolset.*'nope'"):
        resolve_toolsets(["nope"], registry=reg)
    with pytest.raises(ValueError, match="already registered"):
        reg.register(_NeedsProgram())
    with pytest.raises(KeyError, match="unknown tool 'x'"):
        reg.get("x")


async def test_dispatch_unknown_tool_is_a_tool_call_error(tmp_path: Any) -> None:
    from hermes_env.backends.local import LocalBackend

    b = LocalBackend(tmp_path)
    ctx = ToolCallContext("t", b)
    with pytest.raises(ToolCallError, match="unknown tool .rm_rf.; available tools: execute_code, patch"):
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

    ctx = ToolCallContext("t", LocalBackend(tmp_path), timeout=30, max_timeout=120)
    assert ctx.clamp_timeout(None) == 30
    assert ctx.clamp_timeout(600) == 120
    assert ctx.clamp_timeout(5) == 5
    with pytest.raises(ValueError, match="max_timeout"):
        ToolCallContext("t", LocalBackend(tmp_path), timeout=30, max_timeout=10)
