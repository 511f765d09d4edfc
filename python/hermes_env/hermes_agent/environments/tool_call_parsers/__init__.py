"""hermes-agent's ``environments.tool_call_parsers``: its parser registry and classes over hermes_env's parsers.

```python
from hermes_env.hermes_agent.environments.tool_call_parsers import get_parser

parser = get_parser("hermes")
content, tool_calls = parser.parse(raw_model_output)
# content: the text without the tool-call markup, None when the output was only calls
# tool_calls: a list of openai ChatCompletionMessageToolCall, None when there are none
```

Upstream's names, classes (``HermesToolCallParser``, ``MistralToolCallParser``, ...), ``ParseResult`` tuple,
``PARSER_REGISTRY``, ``register_parser``, ``get_parser`` (``KeyError`` for an unknown name) and ``list_parsers``
are kept; the parsing itself is hermes_env's (``hermes_env.parsers``, in Rust), so a ported environment parses
exactly as hermes_env's own Phase 2 does. Every hermes_env parser name is registered too (``pythonic``,
``granite``, ``auto``, ...). A parser class registered by the caller with ``register_parser`` is used as written.

Where hermes_env's parsers answer differently from upstream's on purpose (README, "Tool-call parsers"):
a call whose JSON is broken or cut off is kept as a call with its raw text as arguments (upstream returns the
whole output as content and no calls), and a Hermes block without an ``arguments`` key is content, as in vLLM
(upstream makes it a call with ``{}``); text after the calls is kept in ``content`` (upstream drops it); Mistral
v11 output (``[TOOL_CALLS]name[ARGS]{...}``) gives the name without ``[ARGS]``. What a parse found wrong is
logged (debug) and is available as ``parser.parse_result(text).issues``.
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


# Upstream's parser modules: importing them registers upstream's names and classes.
from hermes_env.hermes_agent.environments.tool_call_parsers.deepseek_v3_1_parser import (  # noqa: E402
    DeepSeekV31ToolCallParser,
)
from hermes_env.hermes_agent.environments.tool_call_parsers.deepseek_v3_parser import (  # noqa: E402
    DeepSeekV3ToolCallParser,
)
from hermes_env.hermes_agent.environments.tool_call_parsers.glm45_parser import Glm45ToolCallParser  # noqa: E402
from hermes_env.hermes_agent.environments.tool_call_parsers.glm47_parser import Glm47ToolCallParser  # noqa: E402
from hermes_env.hermes_agent.environments.tool_call_parsers.hermes_parser import HermesToolCallParser  # noqa: E402
from hermes_env.hermes_agent.environments.tool_call_parsers.kimi_k2_parser import KimiK2ToolCallParser  # noqa: E402
from hermes_env.hermes_agent.environments.tool_call_parsers.llama_parser import LlamaToolCallParser  # noqa: E402
from hermes_env.hermes_agent.environments.tool_call_parsers.longcat_parser import LongcatToolCallParser  # noqa: E402
from hermes_env.hermes_agent.environments.tool_call_parsers.mistral_parser import MistralToolCallParser  # noqa: E402
from hermes_env.hermes_agent.environments.tool_call_parsers.qwen3_coder_parser import (  # noqa: E402
    Qwen3CoderToolCallParser,
)
from hermes_env.hermes_agent.environments.tool_call_parsers.qwen_parser import QwenToolCallParser  # noqa: E402


def _register_other_formats() -> None:
    """hermes_env parser names upstream has no class for, each under a class of its own."""
    for name in _parsers.list_parsers():
        if name not in PARSER_REGISTRY:
            title = "".join(part.capitalize() for part in name.split("_"))
            cls = type(f"{title}ToolCallParser", (CoreToolCallParser,), {"parser_name": name, "__module__": __name__})
            PARSER_REGISTRY[name] = cls


_register_other_formats()

__all__ += [
    "DeepSeekV31ToolCallParser",
    "DeepSeekV3ToolCallParser",
    "Glm45ToolCallParser",
    "Glm47ToolCallParser",
    "HermesToolCallParser",
    "KimiK2ToolCallParser",
    "LlamaToolCallParser",
    "LongcatToolCallParser",
    "MistralToolCallParser",
    "Qwen3CoderToolCallParser",
    "QwenToolCallParser",
]
