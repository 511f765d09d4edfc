"""Raw completion text -> OpenAI chat message: reasoning split off, tool calls parsed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from openai.types.chat import ChatCompletionMessage

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"


def split_reasoning(raw: str) -> tuple[str | None, str]:
    """``(reasoning, rest)``: the ``<think>`` block's text and what follows it.

    Qwen3-style output may omit the opening tag (the template put it in the prompt); an
    unclosed ``<think>`` (output cut by ``max_tokens``) is all reasoning.
    """
    if THINK_CLOSE in raw:
        before, after = raw.split(THINK_CLOSE, 1)
        reasoning = before.split(THINK_OPEN, 1)[-1].strip("\n")
        return reasoning, after.lstrip("\n")
    stripped = raw.lstrip()
    if stripped.startswith(THINK_OPEN):
        return stripped[len(THINK_OPEN) :].strip("\n"), ""
    return None, raw


@dataclass
class ParsedReply:
    content: str | None
    reasoning: str | None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    issues: list[Any] = field(default_factory=list)

    def to_openai(self) -> ChatCompletionMessage:
        """The assistant message; ``parse_issues`` (always present, maybe empty) lists the parser's issues."""
        return ChatCompletionMessage(
            role="assistant",
            content=self.content,
            tool_calls=self.tool_calls or None,  # type: ignore[arg-type]
            reasoning_content=self.reasoning,  # type: ignore[call-arg]  # vLLM's field; openai keeps extras
            parse_issues=[  # type: ignore[call-arg]  # hermes_env's field, read by HermesAgentLoop
                {"kind": i.kind, "offset": i.offset, "message": i.message} for i in self.issues
            ],
        )


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
    calls = [
        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
        for c in result.tool_calls
    ]
    issues = list(result.issues)
    mismatch = parser_mismatch(parser.name, rest, result)  # warns once per (parser, format)
    if mismatch is not None:
        issues.append(mismatch)
    return ParsedReply(content=result.content, reasoning=reasoning, tool_calls=calls, issues=issues)
