"""The shared checks can fail: `lost_text` sees text a parser would have dropped.

A check that passes whatever the parser does is worthless; here each format's real result for a
rendered output is compared against longer outputs, as if the parser had dropped the extra text.
"""

from __future__ import annotations

from collections import Counter

import pytest
from hermes_env.parsers import ParseResult, get_parser, list_parsers

from .parser_checks import AUTO, MARKUP, conformance_name, lost_text

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}}},
        },
    }
]
CALLS = [{"name": "read_file", "arguments": {"path": "a.py", "limit": 10}}]
PROSE = "Then I will summarise it!"


def test_every_parser_has_a_markup_row() -> None:
    assert {conformance_name(n) for n in list_parsers() if n != AUTO} <= MARKUP.keys()


@pytest.mark.parametrize("name", list_parsers())
def test_lost_text_sees_dropped_text(name: str) -> None:
    parser = get_parser(name, tools=TOOLS)
    writer = get_parser("qwen3_coder" if name == AUTO else name, tools=TOOLS)  # auto writes no format
    try:
        text = writer.render(CALLS, content="Let me look.")
    except ValueError:  # formats where the whole output is the call list
        text = writer.render(CALLS)
    result = parser.parse(text)
    assert len(result.tool_calls) == 1
    assert not lost_text(name, text, result), "markup of a rendered call counted as lost"
    # The same result for a longer output: a parser that dropped the prose around the call.
    dropped = Counter("".join(PROSE.split()))
    assert lost_text(name, text + "\n" + PROSE, result) == dropped
    assert lost_text(name, PROSE + "\n" + text, result) == dropped
    # A parser that dropped the whole call (neither a call nor content): its name, keys and values.
    assert lost_text(name, text, ParseResult(content=result.content)) >= Counter("read_filepatha.py10")
