"""Hypothesis properties for every registered parser (one parametrised test per property).

- round trip: ``parse(render(calls, content))`` gives back the content and the calls (names
  equal, arguments equal as JSON), for every example the format's ``render`` accepts (a
  ``ValueError`` from render means the format cannot express it: the example is rejected);
- split invariance: any partition of the rendered text into chunks (including inside markers
  and next to multi-byte characters) gives the same events' concatenations and the same result
  as ``parse``; ``ToolCallStart`` comes once per call with indices 0..n-1;
- arbitrary text, including marker soup: never raises, never loses text.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hermes_env.parsers import get_parser, list_parsers, parser_info
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from .parser_checks import check_nothing_lost, check_stream, chunks_at, lost_text, run_stream

# Parsers that still drop some text on arbitrary input (none now; a parser listed here runs only
# the weaker checks until it is fixed).
TEXT_LOSS_UNFIXED: set[str] = set()

PARAMS: dict[str, dict[str, Any]] = {
    "path": {"type": "string"},
    "content": {"type": "string"},
    "count": {"type": "integer"},
    "ratio": {"type": "number"},
    "force": {"type": "boolean"},
    "options": {"type": "object"},
    "items": {"type": "array"},
}
TOOL_NAMES = ["read_file", "write_file", "terminal", "web_search", "list_processes"]
TOOLS = [
    {"type": "function", "function": {"name": n, "parameters": {"type": "object", "properties": PARAMS}}}
    for n in TOOL_NAMES
]


def _markers() -> list[str]:
    """Every format's markers, from the registry (``parser_info(name).markup``), as the format writes
    them around a ``read_file(path=...)`` call: a marker that opens a named tag (``<function=``) as
    the whole tag (``<function=read_file>``), and markers written back to back (InternLM's
    ``<|action_start|><|plugin|>``) also as one text, so that a call's opening appears whole."""
    markers: dict[str, None] = {}
    for name in list_parsers():
        markup = parser_info(name).markup
        if not markup:
            continue
        text = get_parser(name, tools=TOOLS).render([{"name": "read_file", "arguments": {"path": "a"}}], None)
        for marker in markup:
            named = re.findall(re.escape(marker) + "[^>]*>", text) if marker.endswith("=") else []
            markers.update(dict.fromkeys(named or [marker]))
        markers.update(dict.fromkeys(a + b for a in markup for b in markup if a + b in text))
    return list(markers)


# Marker texts of every format: inside strings they must stay string text, and in arbitrary
# text they must never make a parser lose or invent text.
MARKERS = _markers()

text_st = st.one_of(
    st.text(max_size=30),
    st.sampled_from(MARKERS),
    st.sampled_from(['"', "\\", "\\n", "\\u00e9", "{", "}", "[", "]", "😀", "👩‍👩‍👧", "é", "\u2028", "\x00", "\r\n"]),
    # Python-literal and XML-parameter pieces (pythonic, qwen3_coder, glm): calls, quotes, values.
    st.sampled_from(["read_file(", "list_processes()", "path=", "'", "'''", ")", ",", "r'", "f'", "True", "-1.5e3"]),
    st.sampled_from(["<parameter=path>\n", "\n</parameter>", "<function=terminal>", "<arg_key>path</arg_key>"]),
)
string_st = st.lists(text_st, max_size=6).map("".join)
json_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), string_st
)
json_st = st.recursive(
    json_leaf,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(string_st, inner, max_size=4)),
    max_leaves=12,
)
VALUE_ST: dict[str, Any] = {
    "path": string_st,
    "content": string_st,
    "count": st.integers(min_value=-(10**12), max_value=10**12),
    "ratio": st.floats(allow_nan=False, allow_infinity=False, width=32),
    "force": st.booleans(),
    "options": st.dictionaries(string_st, json_st, max_size=3),
    "items": st.lists(json_st, max_size=3),
}
args_st = st.fixed_dictionaries({}, optional=VALUE_ST)
calls_st = st.lists(st.fixed_dictionaries({"name": st.sampled_from(TOOL_NAMES), "arguments": args_st}), max_size=4)
content_st = st.one_of(st.none(), st.lists(text_st, min_size=1, max_size=5).map("".join))

SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


# `auto` writes no format (its reading of each format's text is tested in test_promptness.py and
# test_upstream_situations.py); every other name renders.
@pytest.mark.parametrize("name", [n for n in list_parsers() if n != "auto"])
@SETTINGS
@given(calls=calls_st, content=content_st, data=st.data())
def test_round_trip_and_split_invariance(
    name: str, calls: list[dict[str, Any]], content: str | None, data: Any
) -> None:
    parser = get_parser(name, tools=TOOLS)
    try:
        text = parser.render(calls, content=content)
    except ValueError:
        assume(False)  # the format cannot express this example
        return
    whole = parser.parse(text)
    assert whole.content == (content or None), f"{name}: content changed by render/parse of {text!r}"
    assert [c.name for c in whole.tool_calls] == [c["name"] for c in calls], text
    for got, want in zip(whole.tool_calls, calls, strict=True):
        assert json.loads(got.arguments) == want["arguments"], f"{name}: arguments changed in {text!r}"
    assert not whole.issues, f"{name}: issues on rendered text {text!r}: {whole.issues!r}"
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=12), label="cuts")
    events, streamed = run_stream(parser, chunks_at(text, cuts))
    check_stream(events, streamed)
    assert streamed == whole
    if len(text) <= 600:  # one character per feed (bounded: one FFI call per character)
        one_char_events, one_char = run_stream(parser, list(text))
        check_stream(one_char_events, one_char)
        assert one_char == whole


@pytest.mark.parametrize("name", list_parsers())
@SETTINGS
@given(text=st.lists(text_st, max_size=25).map("".join), data=st.data())
def test_arbitrary_text_never_raises_or_loses_text(name: str, text: str, data: Any) -> None:
    parser = get_parser(name, tools=TOOLS)
    whole = parser.parse(text)
    if name in TEXT_LOSS_UNFIXED:
        # Known defect (see KNOWN_TEXT_LOSS in test_conformance.py): only the weaker checks.
        check_nothing_lost(name, text, whole, known_loss=bool(lost_text(name, text, whole)))
    else:
        check_nothing_lost(name, text, whole)
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=10), label="cuts")
    events, streamed = run_stream(parser, chunks_at(text, cuts))
    check_stream(events, streamed)
    assert streamed == whole
