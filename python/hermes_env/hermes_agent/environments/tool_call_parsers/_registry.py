"""The registry and base classes behind ``tool_call_parsers`` (re-exported there, upstream's names).

Apart from the package's ``__init__`` so that each parser module can register itself without importing
the package that imports it.
"""

from __future__ import annotations

import json
import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, TypeAlias

from openai.types.chat.chat_completion_message_tool_call import ChatCompletionMessageToolCall, Function

from hermes_env import parsers as _parsers

__all__ = [
    "PARSER_REGISTRY",
    "CoreToolCallParser",
    "ParseResult",
    "ToolCallParser",
    "get_parser",
    "list_parsers",
    "parser_name",
    "register_parser",
]

logger = logging.getLogger(__name__)

#: ``(content, tool_calls)``: content None when the output was only tool calls, tool_calls None when it had none.
ParseResult: TypeAlias = tuple[str | None, list[ChatCompletionMessageToolCall] | None]


class ToolCallParser(ABC):
    """Extracts structured tool calls from one model family's raw output text."""

    @abstractmethod
    def parse(self, text: str) -> ParseResult:
        """``(content, tool_calls)`` of the raw completion ``text`` (see ``ParseResult``)."""
        raise NotImplementedError


PARSER_REGISTRY: dict[str, type[ToolCallParser]] = {}


def register_parser(name: str) -> Callable[[type[ToolCallParser]], type[ToolCallParser]]:
    """Class decorator: register a parser class under ``name`` (a later registration of a name replaces it)."""

    def decorator(cls: type[ToolCallParser]) -> type[ToolCallParser]:
        PARSER_REGISTRY[name] = cls
        return cls

    return decorator


def get_parser(name: str) -> ToolCallParser:
    """A new parser of the class registered under ``name``; ``KeyError`` naming the available ones otherwise."""
    if name not in PARSER_REGISTRY:
        raise KeyError(f"Tool call parser '{name}' not found. Available parsers: {sorted(PARSER_REGISTRY)}")
    return PARSER_REGISTRY[name]()


def list_parsers() -> list[str]:
    """The registered parser names, sorted."""
    return sorted(PARSER_REGISTRY)


def _upstream_arguments(arguments: str) -> str:
    """Arguments as upstream's parsers write them (``json.dumps(..., ensure_ascii=False)``); text that is not
    JSON (a broken or cut-off call) is kept as the model wrote it."""
    try:
        return json.dumps(json.loads(arguments), ensure_ascii=False)
    except ValueError:
        return arguments


class CoreToolCallParser(ToolCallParser):
    """A parser whose parsing is hermes_env's parser ``parser_name``; ``tools`` (OpenAI tool schemas) lets
    formats with untyped parameter text (qwen3_coder, glm45) type the values by the schema."""

    parser_name: ClassVar[str] = "hermes"

    def __init__(self, tools: Sequence[Mapping[str, Any]] | None = None) -> None:
        self._parser = _parsers.get_parser(self.parser_name, tools=tools)

    def parse_result(self, text: str) -> _parsers.ParseResult:
        """hermes_env's own answer: content, calls, and the issues found (``kind``, offsets, message)."""
        return self._parser.parse(text)

    def parse(self, text: str) -> ParseResult:
        result = self._parser.parse(text)
        for issue in result.issues:
            logger.debug(
                "%s parser: %s at character %d: %s", self.parser_name, issue.kind, issue.char_offset, issue.message
            )
        if not result.tool_calls:
            return text, None
        calls = [
            ChatCompletionMessageToolCall(
                id=call.id,
                type="function",
                function=Function(name=call.name, arguments=_upstream_arguments(call.arguments)),
            )
            for call in result.tool_calls
        ]
        content = (result.content or "").strip()
        return content or None, calls


def parser_name(parser: Any) -> str | None:
    """The hermes_env parser name behind a ``get_parser`` result (or a name itself); None for a parser class
    registered by the caller, which hermes_env's Phase-2 server cannot run."""
    if isinstance(parser, CoreToolCallParser):
        return parser.parser_name
    return parser if isinstance(parser, str) else None
