"""Raw completion text -> OpenAI chat message: reasoning split off, tool calls parsed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from openai.types.chat import ChatCompletionMessage
from pydantic import PrivateAttr

from hermes_env.parsers.parsed_call import ParsedToolCall
from hermes_env.parsers.reasoning import split_reasoning

__all__ = ["ParsedMessage", "ParsedReply", "load_parser", "parse_reply", "split_reasoning"]


class ParsedMessage(ChatCompletionMessage):
    """The assistant message of a managed completion: an ``openai`` ``ChatCompletionMessage`` (its OpenAI
    ``tool_calls`` and dump are unchanged) that also hands the agent loop the calls as parsed
    (``parsed_tool_calls``), so they are not read back from the OpenAI objects and parsed again."""

    _parsed_tool_calls: tuple[ParsedToolCall, ...] = PrivateAttr(default=())

    @property
    def parsed_tool_calls(self) -> tuple[ParsedToolCall, ...]:
        return self._parsed_tool_calls


@dataclass
class ParsedReply:
    content: str | None
    reasoning: str | None
    tool_calls: list[ParsedToolCall] = field(default_factory=list)
    issues: list[Any] = field(default_factory=list)

    def to_openai(self) -> ParsedMessage:
        """The assistant message; ``parse_issues`` (always present, maybe empty) lists the parser's issues."""
        message = ParsedMessage(
            role="assistant",
            content=self.content,
            tool_calls=[call.to_openai() for call in self.tool_calls] or None,  # type: ignore[arg-type]
            reasoning_content=self.reasoning,  # type: ignore[call-arg]  # vLLM's field; openai keeps extras
            parse_issues=[  # type: ignore[call-arg]  # hermes_env's field, read by HermesAgentLoop
                {"kind": i.kind, "offset": i.offset, "message": i.message} for i in self.issues
            ],
        )
        message._parsed_tool_calls = tuple(self.tool_calls)
        return message


def load_parser(name: str | None, tools: Sequence[Mapping[str, Any]] | None) -> Any:
    """``hermes_env.parsers.get_parser(name, tools)``, or ``None`` when no parser is wanted."""
    if name is None:
        return None
    from hermes_env.parsers import get_parser

    return get_parser(name, tools=list(tools) if tools else None)


def parse_reply(raw: str, parser: Any) -> ParsedReply:
    """Splits reasoning off ``raw`` and, with a parser, extracts tool calls from the rest."""
    reasoning, rest = split_reasoning(raw)
    if parser is None:
        return ParsedReply(content=rest, reasoning=reasoning)
    from hermes_env.parsers import parser_mismatch

    result = parser.parse(rest)
    calls = [ParsedToolCall.from_parser(call) for call in result.tool_calls]
    issues = list(result.issues)
    mismatch = parser_mismatch(parser.name, rest, result)  # warns once per (parser, format)
    if mismatch is not None:
        issues.append(mismatch)
    return ParsedReply(content=result.content, reasoning=reasoning, tool_calls=calls, issues=issues)
