"""hermes-agent's ``environments.tool_call_parsers``: ``get_parser(name)``, ``list_parsers()``, ``ToolCallParser``.

Backed by hermes_env's parsers (:mod:`hermes_env.parsers`, vLLM's ``--tool-call-parser`` names and upstream's).
``parse(text)`` answers upstream's ``(content, tool_calls)``: content without the call markup (None when the
output was only calls) and ``ChatCompletionMessageToolCall`` objects (None when there were none). A parser
passed to the environment's ``self.server.managed_server(tool_call_parser=...)`` in Phase 2 selects that format.
"""

from __future__ import annotations

import uuid
from typing import Any

from openai.types.chat.chat_completion_message_tool_call import ChatCompletionMessageToolCall, Function

from hermes_env.parsers import get_parser as _hermes_parser
from hermes_env.parsers import list_parsers as _hermes_parsers

ParseResult = tuple[str | None, list[ChatCompletionMessageToolCall] | None]


class ToolCallParser:
    """One tool-call format, by its parser name."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._parser = _hermes_parser(name)

    def parse(self, text: str) -> ParseResult:
        result = self._parser.parse(text)
        calls = [
            ChatCompletionMessageToolCall(
                id=f"call_{uuid.uuid4().hex[:24]}",
                type="function",
                function=Function(name=call.name, arguments=call.arguments),
            )
            for call in result.tool_calls
        ]
        content = result.content if result.content and result.content.strip() else None
        if not calls:
            return text, None
        return content, calls

    def __repr__(self) -> str:
        return f"ToolCallParser({self.name!r})"


def get_parser(name: str) -> ToolCallParser:
    """The parser of ``name``; KeyError naming the available ones for another (as upstream's)."""
    if name not in _hermes_parsers():
        raise KeyError(f"Tool call parser '{name}' not found. Available parsers: {list_parsers()}")
    return ToolCallParser(name)


def list_parsers() -> list[str]:
    return sorted(_hermes_parsers())


def parser_name(parser: Any) -> str | None:
    """The parser name of a ``get_parser`` result or a name; None for anything else."""
    if isinstance(parser, ToolCallParser):
        return parser.name
    return parser if isinstance(parser, str) else None


__all__ = ["ToolCallParser", "get_parser", "list_parsers"]
