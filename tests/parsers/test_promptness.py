"""Streaming promptness for every format, with hypothesis.

Once the bytes that end call k have been fed, ``ToolCallEnd(k)`` has been emitted and call k's
argument deltas so far are its complete arguments (JSON equal to the final ones); prose after
the calls streams as it is fed. Checked for every chunking hypothesis draws (and one character
per feed for short outputs), without ``finish()``.

Where call k ends is found from the format's own ``render``, not from the parser: the outputs
``render(calls[:k+1])`` and ``render(calls)`` agree up to the end of call k (its end marker, or
the end of its call object where the format has none) and differ right after it, or a little
later when the next markup starts like what follows the last call (``<｜tool▁call`` /
``<｜tool▁calls▁end｜>``): their common prefix is at least call k's end, which makes the check
at most that much later, never wrong.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hermes_env.parsers import (
    ContentDelta,
    Parser,
    ToolCallArgsDelta,
    ToolCallEnd,
    get_parser,
    guess_parser,
    list_parsers,
)
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from .parser_checks import chunks_at
from .test_properties import TOOLS, calls_st, content_st

# Every format by name; `auto` reads other formats' text (it writes none).
FORMATS = [n for n in list_parsers() if n != "auto"]
AUTO_READS = ["hermes", "qwen3_coder", "glm45", "kimi_k2", "deepseek_v31", "mistral"]

# Prose written after the calls: plain words, no character that can start a marker.
prose_st = st.lists(
    st.sampled_from(["Done", "the", "build", "is", "green", "é", "中文", "😀", "42", ".", ","]), min_size=1, max_size=6
).map(lambda words: " " + " ".join(words) + ".")

# A fifth of the profile's examples per format (60 in CI): each example streams twice.
SETTINGS = settings(
    max_examples=max(20, settings.default.max_examples // 5),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def call_ends(writer: Parser, calls: list[dict[str, Any]], content: str | None, text: str) -> list[int]:
    """For each call, a character offset by which its end has certainly been fed (see above)."""
    ends = []
    for k in range(len(calls)):
        part = writer.render(calls[: k + 1], content=content)
        n = 0
        for a, b in zip(part, text, strict=False):
            if a != b:
                break
            n += 1
        ends.append(n)
    return ends


def _nonws(s: str) -> str:
    return "".join(s.split())


def check_prompt(parser: Parser, text: str, ends: list[int], prose: str, chunks: list[str]) -> None:
    """Feed `chunks` (whose concatenation is `text + prose`): the promptness rules after each feed."""
    final = parser.parse(text + prose)
    final_args = [c.arguments for c in final.tool_calls]
    s = parser.stream()
    fed = 0
    args: dict[int, str] = {}
    ended: set[int] = set()
    content = ""
    for chunk in chunks:
        for e in s.feed(chunk):
            if isinstance(e, ToolCallArgsDelta):
                args[e.index] = args.get(e.index, "") + e.text
            elif isinstance(e, ToolCallEnd):
                ended.add(e.index)
            elif isinstance(e, ContentDelta):
                content += e.text
        fed += len(chunk)
        for k, end in enumerate(ends):
            if end <= fed:
                assert k in ended, f"call {k} ends at {end} but no ToolCallEnd after {fed} chars of {text!r}"
                assert args.get(k, "") == final_args[k], f"call {k}: arguments still incomplete after {fed} chars"
                json.loads(args[k])  # complete JSON
    # Everything fed: the prose after the calls has streamed, before finish().
    assert _nonws(content).endswith(_nonws(prose)), f"prose after the calls held back: {content!r} vs {prose!r}"


def _example(
    writer: Parser, reader: Parser, calls: list[dict[str, Any]], content: str | None, prose: str
) -> tuple[str, list[int]]:
    try:
        text = writer.render(calls, content=content)
    except ValueError:
        assume(False)  # the format cannot express this example
        raise
    # `auto` goes by the first known marker: content naming another format's is out of scope.
    assume(reader.name != "auto" or guess_parser(text) == writer.name)
    whole = reader.parse(text)
    with_prose = reader.parse(text + prose)
    # Prose after the calls does not change what the calls are.
    assert [(c.name, c.arguments) for c in with_prose.tool_calls] == [(c.name, c.arguments) for c in whole.tool_calls]
    assume(len(whole.tool_calls) == len(calls))
    return text, call_ends(writer, calls, content, text)


@pytest.mark.parametrize(("reader_name", "writer_name"), [(n, n) for n in FORMATS] + [("auto", w) for w in AUTO_READS])
@SETTINGS
@given(calls=calls_st.filter(bool), content=content_st, prose=prose_st, data=st.data())
def test_calls_end_at_their_end_and_prose_streams(
    reader_name: str, writer_name: str, calls: list[dict[str, Any]], content: str | None, prose: str, data: Any
) -> None:
    reader = get_parser(reader_name, tools=TOOLS)
    writer = get_parser(writer_name, tools=TOOLS)
    text, ends = _example(writer, reader, calls, content, prose)
    full = text + prose
    cuts = data.draw(st.lists(st.integers(0, len(full)), max_size=12), label="cuts")
    check_prompt(reader, text, ends, prose, chunks_at(full, cuts))
    if len(full) <= 200:
        check_prompt(reader, text, ends, prose, list(full))


# Outputs from the issue and from situations upstream suites test (each: format, text, where the
# first call's closing markup ends).
CASES = [
    # Issue 11: an XML call was held until finish().
    (
        "qwen3_coder",
        "<tool_call>\n<function=f>\n<parameter=a>\nx\n</parameter>\n</function>\n</tool_call>",
        "</function>",
    ),
    (
        "qwen3_xml",
        "<tool_call>\n<function=f>\n<parameter=a>\nx\n</parameter>\n</function>\n</tool_call>",
        "</function>",
    ),
    ("glm45", "<tool_call>f\n<arg_key>a</arg_key>\n<arg_value>x</arg_value>\n</tool_call>", "</tool_call>"),
    ("glm47", "<tool_call>f<arg_key>a</arg_key><arg_value>x</arg_value></tool_call>", "</tool_call>"),
    # An object-typed and an integer-typed value are released with the markup that ends them.
    (
        "qwen3_coder",
        '<tool_call>\n<function=f>\n<parameter=o>\n{"k": [1]}\n</parameter>\n'
        "<parameter=n>\n7\n</parameter>\n</function>",
        "</function>",
    ),
    ("glm45", '<tool_call>f\n<arg_key>o</arg_key>\n<arg_value>{"k": [1]}</arg_value>\n</tool_call>', "</tool_call>"),
]
TYPED = [
    {
        "type": "function",
        "function": {
            "name": "f",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "string"}, "o": {"type": "object"}, "n": {"type": "integer"}},
            },
        },
    }
]


@pytest.mark.parametrize(("name", "text", "closing"), CASES)
def test_known_cases_close_with_their_markup(name: str, text: str, closing: str) -> None:
    parser = get_parser(name, tools=TYPED)
    end = text.index(closing) + len(closing)
    for size in (1, 2, 3, 4, 7, len(text)):
        check_prompt(
            parser, text, [end], " Done.", [(text + " Done.")[i : i + size] for i in range(0, len(text) + 6, size)]
        )
