"""Tools the model can call, with JSON schemas and availability checks.

A tool is a :class:`Tool` subclass: ``name``, ``toolset`` (the toolset it belongs to first; the
toolset table in :mod:`hermes_env.tools.toolsets` may list it in more), ``description``,
``parameters`` (a JSON schema object), ``parallel_safe`` (may run concurrently with other calls
of the same turn), ``is_available()`` and ``call(args, ctx)``. Callers use :meth:`Tool.run`, which
checks the arguments first and returns a :class:`ToolOutput` (the text the model sees).

Result protocol (hermes-agent's): most tools answer with a JSON object. ``call`` may return a
dict, which :meth:`Tool.run` serialises; a dict with a truthy ``"error"`` marks the call as failed
(``ToolOutput.error``), which the agent loop records as a tool error while the model still sees
the JSON. Exceptions:
- :class:`ToolArgumentError` — the arguments do not fit the schema (missing, wrong type, bad
  regex...). Raised before anything runs.
- :class:`ToolCallError` (its base) — a failure the tool describes in its message.
- Anything else raised is a bug or an infrastructure failure; the loop still turns it into an
  error result so one call fails and not the rollout.
A command that exits non-zero is *not* an error: ``terminal`` reports the exit code.
"""

from __future__ import annotations

import abc
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

from hermes_env._renamed import old_names
from hermes_env.backends.base import ExecutionBackend
from hermes_env.errors import ToolArgumentError, ToolCallError
from hermes_env.timeouts import clamp_timeout
from hermes_env.tools.schema import schema_errors

__all__ = [
    "REGISTRY",
    "Tool",
    "ToolOutput",
    "ToolRegistry",
    "ToolCallContext",
    "error_json",
]


def error_json(message: str, **extra: Any) -> str:
    """hermes-agent's error result: ``{"error": message, ...}`` as JSON text."""
    return json.dumps({"error": message, **extra}, ensure_ascii=False)


class ToolOutput(str):
    """The text a tool call hands the model; ``error`` is set when the call failed."""

    error: str | None

    def __new__(cls, text: str, error: str | None = None) -> ToolOutput:
        self = super().__new__(cls, text)
        self.error = error
        return self

    @classmethod
    def from_result(cls, result: str | dict[str, Any]) -> ToolOutput:
        if isinstance(result, ToolOutput):
            return result
        if isinstance(result, dict):
            error = result.get("error")
            return cls(json.dumps(result, ensure_ascii=False), str(error) if error else None)
        return cls(str(result))


@dataclass
class ToolCallContext:
    """What a tool's handler receives with each call: everything it needs of its rollout.

    ``timeout`` is the default per-command limit and ``max_timeout`` the most a call may ask
    for (defaults to ``timeout``); ``state`` is per-task scratch space shared by the rollout's
    tool calls (the todo list and the background processes live there); ``enabled_tools`` are
    the tool names the rollout was offered (``execute_code`` lets a script call those);
    ``background_timeout`` bounds a ``terminal(background=true)`` job; ``external`` is the
    client of the tool server, when one is configured.
    """

    task_id: str
    backend: ExecutionBackend
    timeout: float = 60.0
    max_timeout: float | None = None
    state: dict[str, Any] = field(default_factory=dict)
    enabled_tools: tuple[str, ...] = ()
    background_timeout: float = 3600.0
    external: Any = None

    def __post_init__(self) -> None:
        if self.timeout <= 0:
            raise ValueError(f"timeout must be positive, got {self.timeout}")
        if self.max_timeout is None:
            self.max_timeout = self.timeout
        if self.max_timeout < self.timeout:
            raise ValueError(f"max_timeout ({self.max_timeout}) must be >= timeout ({self.timeout})")
        if self.background_timeout <= 0:
            raise ValueError(f"background_timeout must be positive, got {self.background_timeout}")

    def clamp_timeout(self, requested: float | None) -> float:
        """The timeout a call gets: the default when not asked, never more than ``max_timeout``, at least 1 s when
        asked (``hermes_env.timeouts.clamp_timeout``)."""
        limit = float(self.max_timeout or self.timeout)
        return clamp_timeout(requested, default=self.timeout, maximum=limit, minimum=1.0)


class Tool(abc.ABC):
    """One callable tool. Subclasses set the class attributes and implement :meth:`call`."""

    name: ClassVar[str]
    toolset: ClassVar[str]
    description: ClassVar[str]
    parameters: ClassVar[dict[str, Any]]
    parallel_safe: ClassVar[bool] = False
    #: Refuse numbers and lengths outside the schema's bounds (hermes-agent's tools clamp them: False).
    check_bounds: ClassVar[bool] = True

    def is_available(self) -> bool:
        """Whether the tool can work on this machine (a required program present, etc.)."""
        return True

    def unavailable_reason(self) -> str:
        """Why :meth:`is_available` is False, for the error a user sees when enabling the tool."""
        return "its availability check failed on this machine"

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
        problems = schema_errors(args, self.parameters, bounds=self.check_bounds)
        if problems:
            raise ToolArgumentError(f"{self.name}: invalid arguments: " + "; ".join(problems))
        return args

    async def run(self, args: Any, ctx: ToolCallContext) -> ToolOutput:
        """Validate ``args`` and run the tool; returns what the model sees."""
        return ToolOutput.from_result(await self.call(self.validate(args), ctx))

    @abc.abstractmethod
    async def call(self, args: dict[str, Any], ctx: ToolCallContext) -> str | dict[str, Any]:
        """Run with already-validated arguments: the result text, or a JSON object."""

    def __repr__(self) -> str:
        return f"<Tool {self.name} ({self.toolset})>"


class ToolRegistry:
    """Tools by name. Which toolsets hold them is :mod:`hermes_env.tools.toolsets`'s table plus each
    tool's own ``toolset``."""

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

    def unregister(self, name: str) -> None:
        self._tools.pop(name, None)

    def get(self, name: str) -> Tool:
        tool = self._tools.get(name)
        if tool is None:
            raise KeyError(f"unknown tool {name!r}; registered tools: {', '.join(self.names())}")
        return tool

    def find(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(list(self._tools.values()))

    def names(self) -> list[str]:
        return sorted(self._tools)

    async def dispatch(self, name: str, args: Any, ctx: ToolCallContext) -> ToolOutput:
        """Run a tool by name; an unknown name is a :class:`ToolCallError`."""
        tool = self._tools.get(name)
        if tool is None:
            raise ToolCallError(f"unknown tool {name!r}; available tools: {', '.join(self.names())}")
        return await tool.run(args, ctx)


REGISTRY = ToolRegistry()
"""The default registry; the built-in tools register themselves when ``hermes_env.tools`` is imported."""


# Old names of this module's classes (hermes_env._renamed.OLD_NAMES), kept for one release; each warns once.
__getattr__ = old_names(__name__)
