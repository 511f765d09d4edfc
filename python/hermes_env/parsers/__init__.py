"""Streaming tool-call parsers: raw model output -> OpenAI content and tool calls.

```python
from hermes_env.parsers import get_parser, list_parsers

p = get_parser("hermes", tools=tools)   # tools: OpenAI tool schemas, optional
r = p.parse(text)                       # ParseResult(content, tool_calls, issues)
s = p.stream()
events = s.feed(delta)                  # [ContentDelta | ToolCallStart | ToolCallArgsDelta | ToolCallEnd]
events += s.finish()
assert s.result() == p.parse(text)      # for every chunking of text
raw = p.render(r.tool_calls, content=r.content)
calls = [ParsedToolCall.from_parser(c) for c in r.tool_calls]  # what the agent loop and the tools use
```

Everything here is implemented in Rust (``hermes_env._core``); this module is the public facade.
Parsers are registered under vLLM's ``--tool-call-parser`` names. Malformed or truncated output
never raises: what is not a call is content, and a ``ParseIssue`` (kind, byte ``offset``,
``char_offset`` into the ``str``, message) says what was wrong. At most ``MAX_ISSUES`` issues are
stored per output; ``ParseResult.issues_omitted`` counts the rest. What a caller passes wrongly
raises a ``hermes_env.errors`` class (a ``ValueError``): ``UnknownParserError`` (its message lists the
names), ``ToolSchemaError``, ``ParserUsageError`` and its ``RenderError``.

Names: vLLM's ``--tool-call-parser`` names, hermes-agent's (``deepseek_v3_1``), and ``auto``,
which picks the format from the output's first marker of a known format (for a tokenizer that
does not say; ``guess_parser(text)`` names the format an output looks like, the same way).
``parser_info(name)`` gives what else is known about a name's format: its markup (special
tokens, text markers), call syntax, and how ``detect_parser`` recognises it.
``parser_mismatch(name, text, result)`` reports a configured parser that found nothing in an
output written in another known format. Where the parsers answer differently from vLLM or
SGLang on purpose (text kept rather than dropped, pythonic call lists after prose, ...), the
README's "Tool-call parsers" section lists each case and why.

Streaming is prompt: once the bytes that end a call are fed (its end marker, or the end of its
call object where a format has none), its ``ToolCallEnd`` has been emitted and its argument
deltas form its complete arguments; text after it streams as it arrives (only a possible marker
prefix, and whitespace that may be framing, wait).

Hermes family (``hermes``, ``qwen``, ``longcat``): text before the first call is content as
written (vLLM's answer); whitespace between and after calls is dropped; other text there is kept
in content with an ``unexpected_text`` issue (vLLM drops it). The JSON inside a call block is
scanned with a real JSON grammar, so ``</tool_call>`` inside a string argument is string text
(vLLM loses such calls). A call starts once its name and arguments key are seen; its arguments
then stream as raw JSON text. If the JSON breaks after that, the call is kept with the raw text
as arguments and a ``malformed_json`` issue; a block that never became a call is returned as
content. Strings holding lone surrogates are repaired with U+FFFD (``invalid_unicode`` issue).
``ParseStream.result()`` copies what was extracted so far: call it once, after ``finish()``.
"""

from __future__ import annotations

from typing import TypeAlias

from hermes_env._core import (
    ISSUE_KINDS,
    MAX_ISSUES,
    ContentDelta,
    ParseIssue,
    Parser,
    ParseResult,
    ParserInfo,
    ParseStream,
    ToolCall,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
    get_parser,
    guess_parser,
    list_parsers,
    parser_info,
)
from hermes_env._lazy import lazy_attributes
from hermes_env.parsers.mismatch import parser_mismatch
from hermes_env.parsers.parsed_call import ArgumentsProblem, ParsedToolCall

#: What ``ParseStream.feed`` / ``finish`` return items of.
Event: TypeAlias = ContentDelta | ToolCallStart | ToolCallArgsDelta | ToolCallEnd

__all__ = [
    "ISSUE_KINDS",
    "MAX_ISSUES",
    "ArgumentsProblem",
    "detect_parser",
    "ContentDelta",
    "Event",
    "ParseIssue",
    "ParseResult",
    "ParseStream",
    "ParsedToolCall",
    "Parser",
    "ParserInfo",
    "ToolCall",
    "ToolCallArgsDelta",
    "ToolCallEnd",
    "ToolCallStart",
    "get_parser",
    "guess_parser",
    "list_parsers",
    "parser_info",
    "parser_mismatch",
]

# detect_parser pulls in tokenizer helpers; imported only when asked for.
__getattr__ = lazy_attributes(__name__, {"hermes_env.parsers.detect": ("detect_parser",)})
