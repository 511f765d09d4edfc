"""hermes-agent's ``atropos.tools.base``: ``ToolCall``, ``ToolResult``, ``ToolSchema``, ``Tool``, ``ToolRegistry``.

``ToolCall`` / ``ToolResult`` are hermes_env's own (``AgentToolCall`` / ``ToolResult`` of
:mod:`hermes_env.agent.steps`). A
:class:`ToolRegistry` holds the tools an agent is offered: hermes_env's tools (what
``build_tool_registry`` resolves from toolsets) or upstream-style :class:`Tool` subclasses.
Offering a tool is all the registry does here: calls run in the rollout's workspace through the
environment's ``exec_tool`` / ``ToolExecutor``, never in this process.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from hermes_env.agent.steps import AgentToolCall as ToolCall
from hermes_env.agent.steps import ToolResult

__all__ = ["Tool", "ToolCall", "ToolRegistry", "ToolResult", "ToolSchema"]


@dataclass
class ToolSchema:
    """A tool as the model sees it."""

    name: str
    description: str
    parameters: dict[str, Any] = field(default_factory=dict)
    required: list[str] = field(default_factory=list)
    external: bool = False  # served by the tool server rather than run in the sandbox

    def to_dict(self) -> dict[str, Any]:
        """The OpenAI function schema."""
        parameters = {"type": "object", "properties": dict(self.parameters.get("properties", self.parameters))}
        required = self.required or list(self.parameters.get("required", []))
        if required:
            parameters["required"] = required
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": parameters},
        }

    def to_prompt_description(self) -> str:
        return json.dumps(self.to_dict()["function"])

    @classmethod
    def from_openai(cls, schema: dict[str, Any], *, external: bool = False) -> ToolSchema:
        function = schema.get("function", schema)
        parameters = dict(function.get("parameters") or {"type": "object", "properties": {}})
        return cls(
            str(function["name"]),
            str(function.get("description") or ""),
            parameters,
            list(parameters.get("required", [])),
            external,
        )


class Tool(ABC):
    """An upstream-style tool: a :class:`ToolSchema` and ``execute(**arguments) -> ToolResult``."""

    @property
    @abstractmethod
    def schema(self) -> ToolSchema:
        """The tool's schema."""

    @property
    def name(self) -> str:
        return self.schema.name

    @abstractmethod
    async def execute(self, **kwargs: Any) -> ToolResult:
        """Run the tool."""

    def is_available(self) -> tuple[bool, str | None]:
        return True, None

    async def __call__(self, **kwargs: Any) -> ToolResult:
        return await self.execute(**kwargs)


def tool_schema(tool: Any) -> ToolSchema:
    """The :class:`ToolSchema` of an upstream-style tool or of one of hermes_env's tools (``.schema`` dict)."""
    schema = tool.schema
    if isinstance(schema, ToolSchema):
        return schema
    from hermes_env.tools.external import ServedTool

    return ToolSchema.from_openai(schema, external=isinstance(tool, ServedTool))


class ToolRegistry:
    """The tools an agent is offered, by name, in registration order."""

    def __init__(self, tools: list[Any] | None = None) -> None:
        self._tools: dict[str, Any] = {}
        for tool in tools or ():
            self.register(tool)

    def register(self, tool: Any) -> None:
        self._tools[tool_schema(tool).name] = tool

    def get(self, name: str) -> Any | None:
        return self._tools.get(name)

    def list_tools(self) -> list[Any]:
        return list(self._tools.values())

    def names(self) -> list[str]:
        return list(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def get_schemas(self) -> list[ToolSchema]:
        return [tool_schema(tool) for tool in self._tools.values()]

    def openai_schemas(self) -> list[dict[str, Any]]:
        return [schema.to_dict() for schema in self.get_schemas()]

    def get_prompt_description(self) -> str:
        return "\n".join(schema.to_prompt_description() for schema in self.get_schemas())

    def get_prompt_tool_definitions_json(self) -> str:
        return json.dumps([schema.to_dict() for schema in self.get_schemas()], ensure_ascii=False)

    async def execute(self, call: ToolCall) -> ToolResult:
        """Run an upstream-style :class:`Tool` in this process; hermes_env's tools need a workspace and are run
        through the environment's ``exec_tool`` instead (an error result says so)."""
        tool = self._tools.get(call.name)
        if tool is None:
            return ToolResult(False, error=f"Unknown tool: {call.name}", uniq_id=call.uniq_id)
        if not isinstance(tool, Tool):
            return ToolResult(
                False,
                error=f"{call.name} runs in a rollout's workspace; call it through the environment's exec_tool",
                uniq_id=call.uniq_id,
            )
        try:
            result = await tool.execute(**call.arguments)
        except Exception as err:  # noqa: BLE001 - a failing tool is an error result, as upstream
            return ToolResult(False, error=f"{type(err).__name__}: {err}", uniq_id=call.uniq_id)
        result.uniq_id = result.uniq_id or call.uniq_id
        return result
