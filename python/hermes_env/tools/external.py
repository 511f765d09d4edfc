"""Tools served by the tool server, offered to the model by name (AgentEnv's ``tool_server_url``).

:func:`connect_tool_server` asks the server for its tools (``GET /tools``) and registers one
:class:`ServedTool` per tool: the model sees the server's schema; a call goes to ``POST /execute``
with the server's bearer token. A served tool named like one of hermes-agent's (``web_search``,
``vision_analyze``, ...) joins that tool's toolset, so ``enabled_toolsets: [web]`` works once the
server provides both web tools. ``tool_server_url: inprocess`` runs the tool server's app inside
this process (no port, no token on the wire), loading its tools from ``tool_server_tools``
(``module:attribute``, as ``python -m hermes_env.slot_pool.tool_server --tools`` takes).
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from typing import Any

import httpx

from hermes_env.errors import ToolServerError
from hermes_env.tools.registry import REGISTRY, Tool, ToolCallContext, ToolRegistry
from hermes_env.tools.toolsets import TOOLSETS

INPROCESS = "inprocess"
TRANSPORT_GRACE_S = 10.0


@dataclass
class ToolServerClient:
    """Talks to one tool server (or the in-process app)."""

    url: str
    client: httpx.AsyncClient

    async def list_tools(self) -> list[dict[str, Any]]:
        try:
            resp = await self.client.get("/tools")
        except httpx.HTTPError as exc:
            raise ToolServerError(f"tool server at {self.url} is unreachable: {type(exc).__name__}: {exc}") from exc
        if resp.status_code != 200:
            raise ToolServerError(
                f"tool server at {self.url} answered {resp.status_code} to GET /tools: {resp.text[:300]}"
            )
        return list(resp.json().get("tools", []))

    async def execute(self, tool: str, args: dict[str, Any], trajectory_id: str, timeout: float) -> dict[str, Any]:
        """The server's ExecResult as a dict; transport failures become an error result."""
        body = {"tool": tool, "args": args, "trajectory_id": trajectory_id, "timeout": timeout}
        try:
            resp = await self.client.post("/execute", json=body, timeout=timeout + TRANSPORT_GRACE_S)
        except httpx.HTTPError as exc:
            return {"output": "", "exit_code": -1, "error": f"tool server unreachable: {type(exc).__name__}: {exc}"}
        if resp.status_code != 200:
            return {
                "output": "",
                "exit_code": -1,
                "error": f"tool server answered {resp.status_code}: {resp.text[:500]}",
            }
        return dict(resp.json())

    async def aclose(self) -> None:
        await self.client.aclose()


def _home_toolset(name: str) -> str:
    """The first hermes-agent toolset listing a tool of that name, else ``tool_server``."""
    return next((ts for ts, spec in TOOLSETS.items() if spec.upstream and name in spec.tools), "tool_server")


class ServedTool(Tool):
    """A model-facing tool whose calls go to the tool server."""

    check_bounds = False

    def __init__(self, schema: dict[str, Any], server: ToolServerClient) -> None:
        function = schema.get("function", schema)
        self.name = str(function["name"])  # type: ignore[misc]
        self.description = str(function.get("description") or f"{self.name} (served by the tool server)")  # type: ignore[misc]
        self.parameters = dict(function.get("parameters") or {"type": "object", "properties": {}})  # type: ignore[misc]
        self.toolset = _home_toolset(self.name)  # type: ignore[misc]
        self.server = server

    async def call(self, args: dict[str, Any], ctx: ToolCallContext) -> str | dict[str, Any]:
        result = await self.server.execute(self.name, args, ctx.task_id, ctx.clamp_timeout(None))
        output, error = str(result.get("output") or ""), result.get("error")
        if error:
            return {"output": output, "error": str(error)}
        # Tools that answer JSON objects (hermes-agent's do) pass through as the model would see them.
        try:
            value = json.loads(output)
        except ValueError:
            return output
        return value if isinstance(value, dict) else output


async def connect_tool_server(
    url: str,
    token: str | None = None,
    *,
    tools_spec: str | None = None,
    registry: ToolRegistry = REGISTRY,
) -> tuple[ToolServerClient, list[str]]:
    """Register the server's tools in ``registry``; the client (close it at shutdown) and the tool names."""
    if url == INPROCESS:
        from hermes_env.slot_pool.tool_server import ToolServerConfig, create_app, load_tools

        if not tools_spec:
            raise ToolServerError(
                "tool_server_url: inprocess needs tool_server_tools (module:attribute holding a list of ExternalTool)"
            )
        token = secrets.token_hex(16)
        app = create_app(load_tools(tools_spec), ToolServerConfig(token=token))
        transport: httpx.AsyncBaseTransport = httpx.ASGITransport(app=app)
        base = "http://toolserver"
    else:
        transport, base = httpx.AsyncHTTPTransport(), url.rstrip("/")
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    server = ToolServerClient(url, httpx.AsyncClient(transport=transport, base_url=base, headers=headers, timeout=30))
    try:
        schemas = await server.list_tools()
    except BaseException:
        await server.aclose()
        raise
    names = []
    for schema in schemas:
        tool = ServedTool(schema, server)
        registry.register(tool, replace=True)
        names.append(tool.name)
    return server, names
