"""Tools served by the tool server are offered to the model by name (AgentEnv's tool_server_url, inprocess too)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hermes_env.backends.local import LocalBackend
from hermes_env.errors import ToolServerError
from hermes_env.slot_pool.tool_server import ExternalTool
from hermes_env.tools import ToolCallContext, ToolRegistry, get_tool_definitions, resolve_toolsets
from hermes_env.tools.builtin import register_builtin_tools
from hermes_env.tools.external import connect_tool_server

SCHEMA = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}


def _search(args: dict) -> dict:
    return {"data": {"web": [{"url": "https://example.org", "title": args["query"], "description": "offline"}]}}


TOOLS = [
    ExternalTool("web_search", _search, "Search the web (test double).", SCHEMA),
    ExternalTool("web_extract", lambda args: {"results": []}, "Extract pages (test double).", {"type": "object"}),
    ExternalTool("lookup", lambda args: "plain text answer", "A custom tool.", {"type": "object"}),
]


async def test_inprocess_tool_server_tools_are_offered_and_called(tmp_path: Path) -> None:
    registry = ToolRegistry()
    register_builtin_tools(registry)
    server, names = await connect_tool_server(
        "inprocess", tools_spec="tests.tools.test_tool_server_tools:TOOLS", registry=registry
    )
    try:
        assert names == ["web_search", "web_extract", "lookup"]
        # The web toolset is complete now, so enabling it is no longer an error.
        assert resolve_toolsets(["web", "terminal"], registry=registry) == ["web", "terminal"]
        offered = [t["function"]["name"] for t in get_tool_definitions(["web"], registry=registry)]
        assert offered == ["web_extract", "web_search"]
        assert [t["function"]["name"] for t in get_tool_definitions(["tool_server"], registry=registry)] == ["lookup"]
        ctx = ToolCallContext("t", LocalBackend(tmp_path))
        found = json.loads(await registry.dispatch("web_search", {"query": "hermes"}, ctx))
        assert found["data"]["web"][0]["title"] == "hermes"
        assert await registry.dispatch("lookup", {}, ctx) == "plain text answer"
    finally:
        await server.aclose()


async def test_an_unreachable_tool_server_is_a_clear_error() -> None:
    with pytest.raises(ToolServerError, match="tool server at http://127.0.0.1:9 is unreachable"):
        await connect_tool_server("http://127.0.0.1:9", "x" * 16, registry=ToolRegistry())
    with pytest.raises(ToolServerError, match="inprocess needs tool_server_tools"):
        await connect_tool_server("inprocess", registry=ToolRegistry())
