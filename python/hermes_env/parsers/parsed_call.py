"""The one shape a tool call the model made has from the parser to the tool: :class:`ParsedToolCall`.

A parser (``hermes_env.parsers``, Phase 2) or an OpenAI-compatible server (Phase 1) yields each call's
id, name and arguments text; :class:`ParsedToolCall` keeps that text exactly as written (a rollout is
replayed and recorded with it) and parses it as JSON once, when the call is made. The agent loop, the
repeated-call check and the tools read the parsed arguments from it; OpenAI dicts are made from it
only where a conversation leaves hermes_env (:meth:`ParsedToolCall.to_openai`).

The Rust parser's own result type stays ``hermes_env.parsers.ToolCall`` (id, name, arguments text):
its fields cannot hold a parsed Python value, so :meth:`ParsedToolCall.from_parser` wraps it once.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from hermes_env.message_fields import message_field


@dataclass(frozen=True, slots=True)
class ArgumentsProblem:
    """Why a call's arguments are not a JSON object; ``message`` is what the model is shown (the loop's
    tool error), ``offset`` the character offset into the arguments text."""

    kind: Literal["malformed_json", "bad_arguments"]
    offset: int
    message: str


@dataclass(frozen=True, slots=True)
class ParsedToolCall:
    """One tool call: ``id``, ``name``, ``arguments_text`` as the model wrote it, and (derived once, at
    construction) ``arguments``, the JSON object it holds, or ``problem`` saying why there is none.

    Blank arguments text means no arguments (``{}``). ``canonical_arguments`` is the arguments as
    compact JSON with sorted keys (the stripped text where it is not JSON): two calls with the same
    name and canonical arguments are the same call, however the model spaced them.
    """

    id: str
    name: str
    arguments_text: str
    arguments: dict[str, Any] | None = field(init=False, hash=False)
    problem: ArgumentsProblem | None = field(init=False)
    canonical_arguments: str = field(init=False, repr=False)

    def __post_init__(self) -> None:
        for attr in ("id", "name", "arguments_text"):
            value = getattr(self, attr)
            if not isinstance(value, str):
                raise TypeError(
                    f"a tool call's {attr} must be a str, got {type(value).__name__} ({value!r}); "
                    "OpenAI tool calls carry their arguments as JSON text"
                )
        text = self.arguments_text
        arguments: dict[str, Any] | None = None
        problem: ArgumentsProblem | None = None
        canonical = text.strip()
        if canonical:
            try:
                value = json.loads(text)
            except json.JSONDecodeError as err:
                problem = ArgumentsProblem(
                    "malformed_json",
                    err.pos,
                    f"Error: the arguments of {self.name!r} are not valid JSON ({err.msg} at position {err.pos}): "
                    f"{text!r}. Call the tool again with a JSON object matching its schema.",
                )
            else:
                canonical = json.dumps(value, sort_keys=True, separators=(",", ":"))
                if isinstance(value, dict):
                    arguments = value
                else:
                    problem = ArgumentsProblem(
                        "bad_arguments",
                        0,
                        f"Error: the arguments of {self.name!r} must be a JSON object, got {type(value).__name__}: "
                        f"{text!r}.",
                    )
        else:
            arguments = {}
        object.__setattr__(self, "arguments", arguments)
        object.__setattr__(self, "problem", problem)
        object.__setattr__(self, "canonical_arguments", canonical)

    @classmethod
    def from_parser(cls, call: Any) -> ParsedToolCall:
        """From the parser's ``ToolCall`` (``hermes_env.parsers``): its id, name and arguments text."""
        return cls(call.id, call.name, call.arguments)

    @classmethod
    def from_openai(cls, call: Any, index: int = 0) -> ParsedToolCall:
        """From an OpenAI tool call (a dict or an ``openai`` object); a call without an id is ``call_<index>``,
        missing name or arguments are empty text."""
        function = message_field(call, "function", {})
        return cls(
            message_field(call, "id") or f"call_{index}",
            message_field(function, "name", ""),
            message_field(function, "arguments", ""),
        )

    def to_openai(self) -> dict[str, Any]:
        """The OpenAI tool-call dict, arguments as the model wrote them."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments_text},
        }


def parsed_tool_calls(message: Any) -> Sequence[ParsedToolCall]:
    """The tool calls of an assistant message (a dict or an ``openai`` object).

    A server that parsed them itself hands them over as ``parsed_tool_calls`` (hermes_env's managed
    server does); otherwise they are read from the message's OpenAI ``tool_calls``.
    """
    parsed = getattr(message, "parsed_tool_calls", None)
    if parsed is not None:
        return parsed
    return [ParsedToolCall.from_openai(call, i) for i, call in enumerate(message_field(message, "tool_calls", ()))]
