"""ParsedToolCall, the one shape of a tool call from the parser to the tool: properties of its round trips.

- parser -> ParsedToolCall -> OpenAI dict -> ParsedToolCall keeps id, name and the arguments text to the
  letter (the text the model wrote, whatever its spacing), and parses the arguments to the object written;
- any arguments text: the OpenAI round trip keeps it, and ``arguments`` / ``problem`` say what
  ``json.loads`` says of it (blank text: no arguments);
- the managed server's message hands the loop the same calls it would read from the message's OpenAI
  ``tool_calls`` (its dict or its ``openai`` object).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hermes_env.managed.response import parse_reply
from hermes_env.parsers import ParsedToolCall, get_parser
from hermes_env.parsers.parsed_call import parsed_tool_calls
from hypothesis import given, settings
from hypothesis import strategies as st
from openai.types.chat import ChatCompletionMessage

# Formats whose calls carry the model's own JSON arguments text (others build the JSON from parameters).
JSON_FORMATS = ["hermes", "mistral", "jamba", "deepseek_v3_1", "kimi_k2", "granite", "xlam", "llama3_json"]

NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,15}", fullmatch=True)
SCALARS = st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=12)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
OBJECTS = st.dictionaries(st.text(min_size=1, max_size=8), JSON_VALUES, max_size=4)


@st.composite
def written(draw: st.DrawFn) -> tuple[dict[str, Any], str]:
    """A JSON object and the text a model might write for it (any spacing, escaping and indentation)."""
    value = draw(OBJECTS)
    separators = draw(st.sampled_from([(",", ":"), (", ", ": "), (" ,", " : "), (",  ", ":")]))
    text = json.dumps(value, separators=separators, ensure_ascii=draw(st.booleans()))
    return value, text


def _round_trip(call: ParsedToolCall) -> ParsedToolCall:
    return ParsedToolCall.from_openai(json.loads(json.dumps(call.to_openai())))


@pytest.mark.parametrize("fmt", JSON_FORMATS)
@settings(max_examples=40, deadline=None)
@given(name=NAMES, arguments=written())
def test_parser_output_round_trips_through_openai(fmt: str, name: str, arguments: tuple[dict[str, Any], str]) -> None:
    value, text = arguments
    parser = get_parser(fmt)
    result = parser.parse(parser.render([{"name": name, "arguments": text}]))
    assert len(result.tool_calls) == 1, (result.content, result.issues)
    call = ParsedToolCall.from_parser(result.tool_calls[0])
    assert (call.id, call.name, call.arguments_text) == (result.tool_calls[0].id, name, text)
    assert call.arguments == value and call.problem is None
    back = _round_trip(call)
    assert back == call
    assert back.canonical_arguments == json.dumps(value, sort_keys=True, separators=(",", ":"))


@settings(max_examples=300, deadline=None)
@given(
    text=st.one_of(
        st.text(max_size=40),
        JSON_VALUES.map(json.dumps),
        written().map(lambda pair: pair[1]),
        st.sampled_from(["", "  ", "\n", "{", '{"a": 1', "[1, 2]", '"x"', "null", "{} {}"]),
    )
)
def test_any_arguments_text_is_kept_and_parsed_once(text: str) -> None:
    call = ParsedToolCall("call_1", "tool", text)
    assert _round_trip(call) == call
    assert call.to_openai()["function"]["arguments"] == text
    if not text.strip():
        assert call.arguments == {} and call.problem is None and call.canonical_arguments == ""
        return
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        assert call.arguments is None and call.problem is not None
        assert (call.problem.kind, call.problem.offset) == ("malformed_json", err.pos)
        assert call.canonical_arguments == text.strip()
        return
    assert call.canonical_arguments == json.dumps(value, sort_keys=True, separators=(",", ":"))
    if isinstance(value, dict):
        assert call.arguments == value and call.problem is None
    else:
        assert call.arguments is None and call.problem is not None and call.problem.kind == "bad_arguments"


@settings(max_examples=60, deadline=None)
@given(calls=st.lists(st.tuples(NAMES, written()), min_size=0, max_size=3), reasoning=st.booleans())
def test_the_managed_message_hands_over_the_calls_its_openai_form_holds(
    calls: list[tuple[str, tuple[dict[str, Any], str]]], reasoning: bool
) -> None:
    parser = get_parser("hermes")
    raw = parser.render([{"name": n, "arguments": text} for n, (_, text) in calls], content=None)
    reply = parse_reply(("<think>plan</think>" if reasoning else "") + raw, parser)
    message = reply.to_openai()
    handed = list(parsed_tool_calls(message))
    assert [(c.name, c.arguments) for c in handed] == [(n, value) for n, (value, _) in calls]
    dumped = message.model_dump(exclude_none=True)
    assert "parsed_tool_calls" not in dumped and "_parsed_tool_calls" not in dumped
    assert list(parsed_tool_calls(dumped)) == handed
    assert list(parsed_tool_calls(ChatCompletionMessage.model_validate(dumped))) == handed


def test_a_call_without_id_name_or_arguments_reads_as_empty_text() -> None:
    call = ParsedToolCall.from_openai({"function": {"name": None}}, index=3)
    assert (call.id, call.name, call.arguments_text, call.arguments) == ("call_3", "", "", {})


def test_arguments_that_are_not_text_are_refused_by_name() -> None:
    with pytest.raises(TypeError, match="arguments_text must be a str, got dict"):
        ParsedToolCall.from_openai({"id": "a", "function": {"name": "t", "arguments": {"x": 1}}})
