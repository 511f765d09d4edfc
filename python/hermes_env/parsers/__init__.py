"""Streaming tool-call parsers (DESIGN.md §1): raw model output -> OpenAI content and tool calls.

```python
from hermes_env.parsers import get_parser, list_parsers

p = get_parser("hermes", tools=tools)   # tools: OpenAI tool schemas, optional
r = p.parse(text)                       # ParseResult(content, tool_calls, issues)
s = p.stream()
events = s.feed(delta)                  # [ContentDelta | ToolCallStart | ToolCallArgsDelta | ToolCallEnd]
events += s.finish()
assert s.result() == p.parse(text)      # for every chunking of text
raw = p.render(r.tool_calls, content=r.content)
```

Everything here is implemented in Rust (``hermes_env._core``); this module is the public facade.
Parsers are registered under vLLM's ``--tool-call-parser`` names. Malformed or truncated output
never raises: what is not a call is content, and a ``ParseIssue`` (kind, byte ``offset``,
``char_offset`` into the ``str``, message) says what was wrong.
"""

from __future__ import annotations

from typing import TypeAlias

from hermes_env._core import (
    ISSUE_KINDS,
    ContentDelta,
    ParseIssue,
    ParseResult,
    Parser,
    ParseStream,
    ToolCall,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
    get_parser,
    list_parsers,
)

#: What ``ParseStream.feed`` / ``finish`` return items of.
Event: TypeAlias = ContentDelta | ToolCallStart | ToolCallArgsDelta | ToolCallEnd

__all__ = [
    "ISSUE_KINDS",
    "ContentDelta",
    "Event",
    "ParseIssue",
    "ParseResult",
    "ParseStream",
    "Parser",
    "ToolCall",
    "ToolCallArgsDelta",
    "ToolCallEnd",
    "ToolCallStart",
    "get_parser",
    "list_parsers",
]
