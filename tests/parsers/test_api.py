"""The hermes_env.parsers API surface: names, errors, result/event shapes, render inputs, bad
input (lone surrogates, deep nesting, malformed and truncated calls) and positions."""

from __future__ import annotations

import json

import pytest
from hermes_env.parsers import (
    ISSUE_KINDS,
    ContentDelta,
    ParseIssue,
    ParseResult,
    ToolCall,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
    get_parser,
    list_parsers,
)
from hypothesis import given, settings
from hypothesis import strategies as st

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]
TEXT = (
    "Let me read it.\n"
    '<tool_call>\n{"name": "read_file", "arguments": {"path": "a.py"}}\n</tool_call>\n'
    '<tool_call>\n{"name": "read_file", "arguments": {"path": "b </tool_call> c"}}\n</tool_call>\n'
)


def test_list_parsers_sorted_with_hermes_family() -> None:
    names = list_parsers()
    assert names == sorted(names)
    assert {"hermes", "qwen", "longcat"} <= set(names)


def test_unknown_parser_lists_names() -> None:
    with pytest.raises(ValueError, match='unknown tool-call parser "nope"') as e:
        get_parser("nope")
    for name in list_parsers():
        assert name in str(e.value)


def test_tools_forms_and_errors() -> None:
    call_x = '<tool_call>{"name": "x", "arguments": {}}</tool_call>'
    # Both forms of tools take effect: a call to a name outside them is reported.
    for tools in (TOOLS, json.dumps(TOOLS)):
        p = get_parser("hermes", tools=tools)
        assert p.name == "hermes"
        assert [i.kind for i in p.parse(call_x).issues] == ["unknown_tool"]
        assert p.parse(call_x.replace('"x"', '"read_file"')).issues == []
    assert get_parser("hermes", tools=None).parse(call_x).issues == []
    with pytest.raises(ValueError, match="tools"):
        get_parser("hermes", tools=[{"type": "function", "function": {}}])
    with pytest.raises(ValueError, match="JSON"):
        get_parser("hermes", tools="{not json")


def test_parse_result_and_message() -> None:
    r = get_parser("hermes", tools=TOOLS).parse(TEXT)
    assert isinstance(r, ParseResult)
    assert r.tools_called
    assert r.content == "Let me read it.\n"
    assert [c.name for c in r.tool_calls] == ["read_file", "read_file"]
    assert json.loads(r.tool_calls[1].arguments) == {"path": "b </tool_call> c"}
    assert r.issues == []
    ids = [c.id for c in r.tool_calls]
    assert all(i.startswith("call_") and len(i) == 29 for i in ids) and len(set(ids)) == 2
    msg = r.to_message()
    assert msg == {
        "role": "assistant",
        "content": "Let me read it.\n",
        "tool_calls": [
            {"id": ids[0], "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}},
            {
                "id": ids[1],
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path": "b </tool_call> c"}'},
            },
        ],
    }
    plain = get_parser("hermes").parse("just text")
    assert plain.to_message() == {"role": "assistant", "content": "just text"}
    assert not plain.tools_called and plain.tool_calls == []
    assert get_parser("hermes").parse("").content is None


def test_stream_events_and_openai_deltas() -> None:
    p = get_parser("hermes")
    s = p.stream()
    events = []
    for ch in TEXT:
        events += s.feed(ch)
    events += s.finish()
    assert s.finished and s.offset == len(TEXT.encode())
    assert s.result() == p.parse(TEXT)
    kinds = [type(e) for e in events]
    assert kinds[0] is ContentDelta
    starts = [e for e in events if isinstance(e, ToolCallStart)]
    assert [e.index for e in starts] == [0, 1]
    assert events[kinds.index(ToolCallStart)].to_openai_delta() == {
        "tool_calls": [
            {"index": 0, "id": starts[0].id, "type": "function", "function": {"name": "read_file", "arguments": ""}}
        ]
    }
    arg = next(e for e in events if isinstance(e, ToolCallArgsDelta))
    assert arg.to_openai_delta() == {"tool_calls": [{"index": 0, "function": {"arguments": arg.text}}]}
    assert ContentDelta("hi").to_openai_delta() == {"content": "hi"}
    assert ToolCallEnd(0).to_openai_delta() == {}
    assert isinstance(events[-1], ToolCallEnd) and events[-1].index == 1
    # Arguments stream as they arrive, not at the end of the call.
    first_args = [i for i, e in enumerate(events) if isinstance(e, ToolCallArgsDelta) and e.index == 0]
    assert len(first_args) > 5
    match events[0]:
        case ContentDelta(text):
            assert text == "L"
        case other:
            pytest.fail(f"first event {other!r} is not a ContentDelta")
    assert s.finish() == []  # idempotent
    with pytest.raises(ValueError, match="after finish"):
        s.feed("more")


def test_equality_ignores_ids() -> None:
    p = get_parser("hermes")
    a, b = p.parse(TEXT), p.parse(TEXT)
    assert a.tool_calls[0].id != b.tool_calls[0].id
    assert a == b
    assert a != p.parse("other")
    assert ToolCall("f", "{}") == ToolCall("f", "{}", id="call_x")
    assert "ParseResult(content='Let me read it.\\n'" in repr(a)


def test_render_inputs() -> None:
    p = get_parser("hermes")
    r = p.parse(TEXT)
    assert p.parse(p.render(r.tool_calls, content=r.content)) == r
    dicts = [
        {"name": "read_file", "arguments": {"path": "ü"}},
        {"name": "read_file", "arguments": '{"path": "x"}'},
        {"id": "call_1", "type": "function", "function": {"name": "list_processes", "arguments": "{}"}},
        {"name": "noargs"},
    ]
    out = p.parse(p.render(dicts))
    assert [(c.name, json.loads(c.arguments)) for c in out.tool_calls] == [
        ("read_file", {"path": "ü"}),
        ("read_file", {"path": "x"}),
        ("list_processes", {}),
        ("noargs", {}),
    ]
    with pytest.raises(ValueError, match="not valid JSON"):
        p.render([{"name": "f", "arguments": "{broken"}])
    with pytest.raises(ValueError, match="start marker"):
        p.render([], content="see <tool_call> here")
    with pytest.raises(TypeError, match="tool_calls\\[0\\]"):
        p.render([42])


def test_lone_surrogates_are_replaced_and_reported() -> None:
    p = get_parser("hermes")
    text = 'a\ud800b<tool_call>{"name": "f", "arguments": {"x": "\udfff"}}</tool_call>'
    r = p.parse(text)
    assert r.content == "a\ufffdb"
    assert json.loads(r.tool_calls[0].arguments) == {"x": "\ufffd"}
    bad = [i for i in r.issues if i.kind == "invalid_unicode"]
    assert [i.char_offset for i in bad] == [1, text.index("\udfff")]
    s = p.stream()
    for ch in text:
        s.feed(ch)
    s.finish()
    assert s.result() == r


def test_deep_nesting() -> None:
    depth = 100_000
    args = '{"a": ' + "[" * depth + "]" * depth + "}"
    r = get_parser("hermes").parse(f'<tool_call>{{"name": "deep", "arguments": {args}}}</tool_call>')
    assert r.tool_calls[0].arguments == args and r.issues == []
    r = get_parser("hermes").parse('<tool_call>{"name": "deep", "arguments": ' + "[" * depth)
    assert [i.kind for i in r.issues] == ["bad_arguments", "truncated"]


def test_issue_offsets_are_bytes_and_chars() -> None:
    text = 'héllo 😀 <tool_call>{"name": "f", "arguments": {"a": NaN}}</tool_call>'
    r = get_parser("hermes").parse(text)
    (issue,) = r.issues
    assert issue.kind == "malformed_json"
    assert text[issue.char_offset :].startswith("NaN")
    assert text.encode()[issue.offset :].startswith(b"NaN")
    assert "byte" in issue.message
    # The call had started: it stays, with the raw text as arguments.
    assert r.tool_calls[0].arguments == '{"a": NaN}}'
    assert issue.kind in ISSUE_KINDS


NO_NAME = '<tool_call>{"arguments": {}}</tool_call>'
NAME_NOT_STR = '<tool_call>{"name": 7, "arguments": {}}</tool_call>'
NO_ARGS = '<tool_call>{"name": "read_file"}</tool_call>'


def test_bad_input_kinds() -> None:
    """Each kind of bad input: the issue kinds, and where the text went (content or the call)."""
    p = get_parser("hermes", tools=TOOLS)
    block = '<tool_call>{"name": "read_file", "arguments": {}}</tool_call>'
    cases: dict[str, tuple[list[str], str | None, int]] = {
        # text: (issue kinds, content, number of calls)
        '<tool_call>{"name": "nope", "arguments": {}}</tool_call>': (["unknown_tool"], None, 1),
        NO_NAME: (["missing_name"], NO_NAME, 0),
        NAME_NOT_STR: (["missing_name"], NAME_NOT_STR, 0),
        NO_ARGS: (["missing_arguments"], NO_ARGS, 0),
        '<tool_call>{"name": "read_file", "arguments": "{}"}</tool_call>': (["bad_arguments"], None, 1),
        '<tool_call>{"name": "read_file", "arguments": {"path": "a.py"': (["truncated"], None, 1),
        '<tool_call>{"name": "read_': (["truncated"], '<tool_call>{"name": "read_', 0),
        "<tool_call> nothing": (["malformed_markup"], "<tool_call> nothing", 0),
        block + " and more": (["unexpected_text"], " and more", 1),
        block + "\n" + block + "\n": ([], None, 2),
        '<tool_call>{"name": "read_file", "arguments": {}}\nmore': (["malformed_markup"], "more", 1),
        '<tool_call>{"name": "read_file", "arguments": {}},}</tool_call>': (["malformed_markup"], ",}</tool_call>", 1),
        '<tool_call>{"name": "read_file", "arguments": {},}</tool_call>': (["malformed_json"], "}", 1),
        '<tool_call>{"name": "read_file", "arguments": {}}': (["truncated"], None, 1),
        "<tool_call><tool_call>" + block[11:]: (["malformed_markup"], "<tool_call>", 1),
    }
    for text, (kinds, content, n_calls) in cases.items():
        r = p.parse(text)
        assert [i.kind for i in r.issues] == kinds, (text, r)
        assert r.content == content, (text, r)
        assert len(r.tool_calls) == n_calls, (text, r)
    r = p.parse('<tool_call>{"name": "read_file", "arguments": {"path": "a.py"')
    assert r.tool_calls[0].arguments == '{"path": "a.py"'


@settings(deadline=None, max_examples=150)
@given(
    text=st.lists(
        st.one_of(
            st.text(st.characters(exclude_categories=()), max_size=8),
            st.sampled_from(["<tool_call>", "</tool_call>", '{"name": "f", "arguments": {"a": "', '"}}']),
        ),
        max_size=12,
    ).map("".join),
    data=st.data(),
)
def test_any_python_str_including_surrogates(text: str, data: st.DataObject) -> None:
    """Any Python str (lone surrogates included) parses without raising, whole or streamed."""
    p = get_parser("hermes")
    whole = p.parse(text)
    n_bad = sum(0xD800 <= ord(c) <= 0xDFFF for c in text)
    bad = [i for i in whole.issues if i.kind == "invalid_unicode"]
    assert len(bad) == n_bad
    assert all(0xD800 <= ord(text[i.char_offset]) <= 0xDFFF for i in bad)
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(text)), max_size=6))))
    s = p.stream()
    for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True):
        s.feed(text[a:b])
    s.finish()
    assert s.result() == whole
    if not whole.tool_calls:
        repaired = "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)
        assert (whole.content or "") == repaired


def test_issue_kinds_match_the_stub() -> None:
    """The Rust IssueKind list and the `_IssueKind` Literal in _core.pyi stay in step."""
    import re
    from pathlib import Path

    import hermes_env

    stub = (Path(hermes_env.__file__).parent / "_core.pyi").read_text(encoding="utf-8")
    block = re.search(r"_IssueKind = _Literal\[(.*?)\]", stub, re.S)
    assert block is not None
    assert re.findall(r'"(\w+)"', block.group(1)) == ISSUE_KINDS


def test_results_and_events_pickle() -> None:
    """Results and events cross process boundaries (multiprocessing, Ray) intact."""
    import pickle

    p = get_parser("hermes", tools=TOOLS)
    r = p.parse(TEXT + '<tool_call>{"name": "nope", "arguments": {}}</tool_call>')
    back = pickle.loads(pickle.dumps(r))
    assert back == r and back.to_message() == r.to_message()
    assert [c.id for c in back.tool_calls] == [c.id for c in r.tool_calls]
    s = p.stream()
    events = s.feed(TEXT) + s.finish()
    again = pickle.loads(pickle.dumps(events))
    assert [type(e) for e in again] == [type(e) for e in events]
    assert [e.to_openai_delta() for e in again] == [e.to_openai_delta() for e in events]
    built = ParseResult("hi", [ToolCall("f", "{}")], [ParseIssue("truncated", 3, 2, "cut")])
    assert pickle.loads(pickle.dumps(built)) == built
    assert built.to_message()["tool_calls"][0]["function"] == {"name": "f", "arguments": "{}"}
    assert built != ParseResult("hi", [ToolCall("f", "{}")], [ParseIssue("truncated", 4, 2, "cut")])
    with pytest.raises(ValueError, match="unknown issue kind"):
        ParseIssue("nope", 0, 0, "")
