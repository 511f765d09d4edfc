"""Tools the model can call, with JSON schemas and availability checks, grouped into toolsets.

A tool is a :class:`Tool` subclass: ``name``, ``toolset``, ``description``, ``parameters`` (a
JSON schema object), ``parallel_safe`` (may run concurrently with other calls of the same
turn), ``is_available()`` and ``call(args, ctx)``. Callers use :meth:`Tool.run`, which checks the
arguments first.

Error protocol (what the agent loop relies on):
- :class:`ToolArgumentError` — the arguments do not fit the schema (missing, wrong type,
  unknown key, invalid regex...). Raised before anything runs.
- :class:`ToolCallError` (its base) — the call was well formed but failed in a way the model
  should be told about (file not found, path outside the workspace, patch text not found).
- Anything else raised is a bug or an infrastructure failure; the loop should still turn it
  into an error message so one call fails and not the rollout.
A command that exits non-zero is *not* an error: ``terminal`` reports the exit code in its text.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from hermes_env.backends.base import ExecutionBackend
from hermes_env.errors import ToolArgumentError, ToolCallError
from hermes_env.tools.schema import schema_errors

__all__ = ["REGISTRY", "Tool", "ToolArgumentError", "ToolCallError", "ToolRegistry", "ToolRunContext"]


@dataclass
class ToolRunContext:
    """Everything a tool needs for one rollout.

    ``timeout`` is the default per-command limit and ``max_timeout`` the most a call may ask
    for (defaults to ``timeout``); ``state`` is per-task scratch space shared by the rollout's
    tool calls (the todo list lives there).
    """

    task_id: str
    backend: ExecutionBackend
    timeout: float = 60.0
    max_timeout: float | None = None
    max_output_chars: int = 20_000
    state: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.timeout <= 0:
            raise ValueError(f"timeout must be positive, got {self.timeout}")
        if self.max_timeout is None:
            self.max_timeout = self.timeout
        if self.max_timeout < self.timeout:
            raise ValueError(f"max_timeout ({self.max_timeout}) must be >= timeout ({self.timeout})")
        if self.max_output_chars < 200:
            raise ValueError(f"max_output_chars must be at least 200, got {self.max_output_chars}")

    def clamp_timeout(self, requested: float | None) -> float:
        """The timeout a call gets: the default when not asked, never more than ``max_timeout``."""
        limit = float(self.max_timeout or self.timeout)
        if requested is None:
            return min(self.timeout, limit)
        return max(1.0, min(float(requested), limit))


class Tool(abc.ABC):
    """One callable tool. Subclasses set the class attributes and implement :meth:`call`."""

    name: ClassVar[str]
    toolset: ClassVar[str]
    description: ClassVar[str]
    parameters: ClassVar[dict[str, Any]]
    parallel_safe: ClassVar[bool] = False

    def is_available(self) -> bool:
        """Whether the tool can work on this machine (a required program present, etc.)."""
        return True

    @property
    def schema(self) -> dict[str, Any]:
        """The OpenAI function-tool dict (what goes into ``tools=[...]`` / the chat template)."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    def validate(self, args: Any) -> dict[str, Any]:
        """``args`` checked against ``parameters``; :class:`ToolArgumentError` listing every problem."""
        if not isinstance(args, dict):
            raise ToolArgumentError(
                f"{self.name}: arguments must be a JSON object, got {type(args).__name__}; "
                f"expected parameters: {', '.join(self.parameters.get('properties', {}))}"
            )
        problems = schema_errors(args, self.parameters)
        if problems:
            raise ToolArgumentError(f"{self.name}: invalid arguments: " + "; ".join(problems))
        return args

    async def run(self, args: Any, ctx: ToolRunContext) -> str:
        """Validate ``args`` and run the tool; returns the text the model sees."""
        return await self.call(self.validate(args), ctx)

    @abc.abstractmethod
    async def call(self, args: dict[str, Any], ctx: ToolRunContext) -> str:
        """Run with already-validated arguments."""

    def __repr__(self) -> str:
        return f"<Tool {self.name} ({self.toolset})>"


class ToolRegistry:
    """Tools by name; toolsets are the ``toolset`` attribute of the registered tools."""

    def __init__(self) -> None:
        self._tools: dict[str, Tool] = {}

    def register(self, tool: Tool, *, replace: bool = False) -> Tool:
        for attr in ("name", "toolset", "description", "parameters"):
            if not getattr(tool, attr, None):
                raise ValueError(f"tool {type(tool).__name__} has no {attr}; set it as a class attribute")
        if tool.parameters.get("type") != "object":
            raise ValueError(
                f"tool {tool.name}: parameters must be a JSON schema of type 'object'; build it with object_schema()"
            )
        if tool.name in self._tools and not replace:
            raise ValueError(f"a tool named {tool.name!r} is already registered; rename it or pass replace=True")
        self._tools[tool.name] = tool
        return tool

    def get(self, name: str) -> Tool:
        tool = self._tools.get(name)
        if tool is None:
            raise KeyError(f"unknown tool {name!r}; registered tools: {', '.join(self.names())}")
        return tool

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def names(self) -> list[str]:
        return sorted(self._tools)

    def toolsets(self) -> dict[str, list[str]]:
        """toolset -> sorted tool names, from what is registered."""
        out: dict[str, list[str]] = {}
        for tool in self._tools.values():
            out.setdefault(tool.toolset, []).append(tool.name)
        return {k: sorted(v) for k, v in sorted(out.items())}

    def tools_for_toolsets(self, names: Iterable[str], *, available_only: bool = True) -> list[Tool]:
        """The tools of the named toolsets, in registration order; ValueError for an unknown toolset."""
        wanted = list(names)
        known = self.toolsets()
        unknown = [n for n in wanted if n not in known]
        if unknown:
            raise ValueError(f"unknown toolset(s) {', '.join(map(repr, unknown))}; valid toolsets: {', '.join(known)}")
        return [
            tool
            for tool in self._tools.values()
            if tool.toolset in wanted and (not available_only or tool.is_available())
        ]

    def schemas(self, names: Iterable[str]) -> list[dict[str, Any]]:
        """OpenAI tool dicts for the named toolsets."""
        return [tool.schema for tool in self.tools_for_toolsets(names)]

    async def dispatch(self, name: str, args: Any, ctx: ToolRunContext) -> str:
        """Run a tool by name; an unknown name is a :class:`ToolCallError` the model sees."""
        tool = self._tools.get(name)
        if tool is None:
            raise ToolCallError(f"unknown tool {name!r}; available tools: {', '.join(self.names())}")
        return await tool.run(args, ctx)


REGISTRY = ToolRegistry()
"""The default registry; the built-in tools register themselves when ``hermes_env.tools`` is imported."""
