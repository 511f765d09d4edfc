"""The situations vLLM's ``tests/tool_parsers`` and SGLang's function-call tests check, in this
project's own words: streaming close, missing closing tags, composition schemas, text around
calls, typed values, unknown tools, truncation. (Their suites themselves run against hermes_env
through ``tools/upstream_suites/``, a development check.) Where hermes_env answers differently on
purpose, the test says so and the parser docs list it.
"""

from __future__ import annotations

import json
import pickle
from typing import Any

import pytest
from hermes_env.parsers import (
    MAX_ISSUES,
    ContentDelta,
    ParseResult,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
    get_parser,
    guess_parser,
    list_parsers,
)

from .parser_checks import check_nothing_lost, check_stream, chunks_fixed, run_stream


def _tool(name: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


WEATHER = _tool(
    "get_weather",
    {
        "type": "object",
        "properties": {"city": {"type": "string"}, "state": {"type": "string"}, "days": {"type": "integer"}},
    },
)
AREA = _tool(
    "area",
    {
        "type": "object",
        "properties": {
            "shape": {"type": "string"},
            "dims": {"type": "object"},
            "precision": {"type": "integer"},
            "ratio": {"type": "number"},
            "exact": {"type": "boolean"},
        },
    },
)
TOOLS = [WEATHER, AREA]


def args(result: ParseResult, i: int = 0) -> Any:
    return json.loads(result.tool_calls[i].arguments)


def kinds(result: ParseResult) -> list[str]:
    return [i.kind for i in result.issues]


def every_way(name: str, text: str, tools: list[dict[str, Any]] | None = TOOLS) -> ParseResult:
    """`parse`, and streams of 1, 2, 3, 5 and 8 characters: all give the same (checked) result."""
    parser = get_parser(name, tools=tools)
    whole = parser.parse(text)
    for size in (1, 2, 3, 5, 8):
        events, streamed = run_stream(parser, chunks_fixed(text, size))
        check_stream(events, streamed)
        assert streamed == whole, f"{name}: {size}-char stream differs from parse"
    # `auto` consumes the markup of the format it picked.
    check_nothing_lost((guess_parser(text) or "hermes") if name == "auto" else name, text, whole)
    return whole


# --------------------------------------------------------------------------------- streaming close


def test_a_call_closing_and_the_next_starting_in_one_delta() -> None:
    parser = get_parser("qwen3_coder", tools=TOOLS)
    s = parser.stream()
    s.feed("<tool_call>\n<function=get_weather>\n<parameter=city>\nDallas\n</parameter>\n")
    events = s.feed("</function>\n</tool_call>\n<tool_call>\n<function=get_weather>\n")
    assert [type(e) for e in events] == [ToolCallArgsDelta, ToolCallEnd, ToolCallStart]
    assert events[2].index == 1


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("hermes", 'Sure.<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'),
        (
            "qwen3_coder",
            "Sure.<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>",
        ),
        ("glm45", "Sure.<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>"),
        (
            "kimi_k2",
            "Sure.<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
            '<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|>',
        ),
    ],
)
def test_content_and_a_whole_call_in_one_delta(name: str, text: str) -> None:
    s = get_parser(name, tools=TOOLS).stream()
    events = s.feed(text)
    assert isinstance(events[0], ContentDelta) and events[0].text == "Sure."
    assert isinstance(events[-1], ToolCallEnd), events  # closed without finish()
    assert json.loads("".join(e.text for e in events if isinstance(e, ToolCallArgsDelta))) == {"city": "Paris"}


# --------------------------------------------------------------------------------- missing tags


def test_qwen3_coder_missing_parameter_end_marker() -> None:
    # vLLM and SGLang end a value at the next `<parameter=` or `</function>`; so does hermes_env
    # when it starts a line, and reports it.
    text = (
        "Let me check:\n<tool_call>\n<function=get_weather>\n<parameter=city>\nDallas\n<parameter=state>\nTX\n"
        "</parameter>\n<parameter=days>\n3\n</function>\n</tool_call>"
    )
    r = every_way("qwen3_coder", text)
    assert args(r) == {"city": "Dallas", "state": "TX", "days": 3}
    assert r.content == "Let me check:"
    assert kinds(r) == ["malformed_markup", "malformed_markup"]


def test_qwen3_coder_every_parameter_end_marker_missing() -> None:
    text = "<function=get_weather>\n<parameter=city>Paris\n<parameter=state>IDF\n<parameter=days>3\n</function>"
    r = every_way("qwen3_coder", text)
    assert args(r) == {"city": "Paris", "state": "IDF", "days": 3}
    assert kinds(r)[0] == "malformed_markup"  # <function= without <tool_call>


def test_qwen3_coder_missing_tool_call_tags() -> None:
    r = every_way(
        "qwen3_coder", "I'll check.\n\n<function=get_weather>\n<parameter=city>\nRome\n</parameter>\n</function>"
    )
    assert r.content == "I'll check."
    assert args(r) == {"city": "Rome"}
    # A missing </tool_call> at the very end: the call is complete, the output reported cut.
    r = every_way(
        "qwen3_coder", "<tool_call>\n<function=get_weather>\n<parameter=city>\nRome\n</parameter>\n</function>"
    )
    assert args(r) == {"city": "Rome"} and kinds(r) == ["truncated"]


def test_hermes_call_until_end_of_output() -> None:
    r = every_way("hermes", '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}')
    assert args(r) == {"city": "Oslo"}
    assert kinds(r) == ["truncated"]
    # The arguments are complete; the message says what is missing (vLLM drops this call).
    r = every_way("hermes", '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}')
    assert args(r) == {"city": "Oslo"}
    assert "complete arguments" in r.issues[0].message and "</tool_call>" in r.issues[0].message
    r = every_way("hermes", '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Os')
    assert "incomplete" in r.issues[0].message


@pytest.mark.parametrize(
    "text",
    [
        "<tool_call>\n<function=get_weather\n<parameter=city>\nx\n</parameter>\n</function>\n</tool_call>",
        "<tool_call>\n<function=get_weather>\n<parameter=city\nx\n</parameter>\n</function>\n</tool_call>",
        "<tool_call><function=",
    ],
)
def test_qwen3_coder_markup_without_closing_gt_is_kept(text: str) -> None:
    r = every_way("qwen3_coder", text)
    assert r.issues  # never raises, never loses text (checked in every_way)


# ------------------------------------------------------------------------- composition schemas

COMPOSED = [
    # Properties under a top-level oneOf (pydantic unions), a $ref'd model, a nullable anyOf.
    _tool(
        "send",
        {
            "$defs": {"Payload": {"type": "object", "properties": {"value": {"type": "string"}}}},
            "oneOf": [
                {"type": "object", "properties": {"payload": {"$ref": "#/$defs/Payload"}}},
                {"type": "object", "properties": {"count": {"anyOf": [{"type": "integer"}, {"type": "null"}]}}},
            ],
            "allOf": [{"properties": {"note": {"anyOf": [{"type": "string"}, {"type": "null"}]}}}],
        },
    )
]
COMPOSED_OUTPUTS = {
    "qwen3_coder": (
        '<tool_call>\n<function=send>\n<parameter=payload>\n{"value": "hello"}\n</parameter>\n'
        '<parameter=count>\n7\n</parameter>\n<parameter=note>\n{"a": 1}\n</parameter>\n</function>\n</tool_call>'
    ),
    "glm45": (
        '<tool_call>send\n<arg_key>payload</arg_key>\n<arg_value>{"value": "hello"}</arg_value>\n'
        "<arg_key>count</arg_key>\n<arg_value>7</arg_value>\n"
        '<arg_key>note</arg_key>\n<arg_value>{"a": 1}</arg_value>\n</tool_call>'
    ),
    "glm47": (
        '<tool_call>send<arg_key>payload</arg_key><arg_value>{"value": "hello"}</arg_value>'
        "<arg_key>count</arg_key><arg_value>7</arg_value>"
        '<arg_key>note</arg_key><arg_value>{"a": 1}</arg_value></tool_call>'
    ),
}


@pytest.mark.parametrize("name", sorted(COMPOSED_OUTPUTS))
def test_typed_values_follow_schema_composition(name: str) -> None:
    r = every_way(name, COMPOSED_OUTPUTS[name], tools=COMPOSED)
    # An object stays an object (not the JSON string "{\"value\": ...}"), the integer an integer;
    # a string-or-null parameter keeps its text (not parsed as JSON, not double-encoded).
    assert args(r) == {"payload": {"value": "hello"}, "count": 7, "note": '{"a": 1}'}
    assert not r.issues


def test_typed_values_convert_like_vllm() -> None:
    text = (
        "<tool_call>\n<function=area>\n<parameter=shape>\nrect\n</parameter>\n<parameter=dims>\n"
        '{"w": 10, \n "h": 20}\n</parameter>\n<parameter=precision>\n2\n</parameter>\n<parameter=ratio>\n1.5\n'
        "</parameter>\n<parameter=exact>\ntrue\n</parameter>\n</function>\n</tool_call>"
    )
    r = every_way("qwen3_coder", text)
    assert args(r) == {"shape": "rect", "dims": {"w": 10, "h": 20}, "precision": 2, "ratio": 1.5, "exact": True}


# ---------------------------------------------------------------------------- text around calls


def test_text_after_calls_is_kept_and_reported() -> None:
    # vLLM drops it; dropping text a model wrote would hide it from the trainer.
    r = every_way(
        "deepseek_v31",
        "prefix <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>"
        '{"city": "Lima"}<｜tool▁call▁end｜><｜tool▁calls▁end｜> suffix',
    )
    assert args(r) == {"city": "Lima"}
    assert r.content is not None and "suffix" in r.content


def test_kimi_text_inside_a_section_is_kept_and_reported() -> None:
    text = (
        "Reasoning. <|tool_calls_section_begin|> noise <|tool_call_begin|>functions.get_weather:0 "
        '<|tool_call_argument_begin|>{"city": "Kyiv"} <|tool_call_end|><|tool_calls_section_end|>'
    )
    r = every_way("kimi_k2", text)
    assert r.tool_calls[0].id == "functions.get_weather:0" and args(r) == {"city": "Kyiv"}
    assert "noise" in (r.content or "") and "unexpected_text" in kinds(r)


def test_pythonic_list_after_prose() -> None:
    text = "Here you go: [get_weather(city='Paris', days=2)]"
    r = every_way("pythonic", text)
    assert r.content == "Here you go: " and args(r) == {"city": "Paris", "days": 2}
    # vLLM's rule (the list must start the output) as an option, and without tools.
    for parser in (get_parser("pythonic", tools=TOOLS, calls_after_prose=False), get_parser("pythonic")):
        strict = parser.parse(text)
        assert not strict.tool_calls and strict.content == text
    # A list after prose naming a tool the request does not have is text.
    assert not get_parser("pythonic", tools=TOOLS).parse("I would use [search(q='x')].").tool_calls


def test_llama3_json_after_prose_stays_content() -> None:
    # vLLM decodes JSON at any `{` and drops the prose; a Llama 3 tool turn is only JSON.
    text = 'Here is the result: {"name": "get_weather", "parameters": {}} Want more?'
    r = every_way("llama3_json", text)
    assert not r.tool_calls and r.content == text


def test_unknown_tools_are_kept_and_reported() -> None:
    # vLLM's glm parsers drop calls to tools the request does not have.
    for name, text in [
        ("glm45", "<tool_call>delete_all\n<arg_key>x</arg_key>\n<arg_value>1</arg_value>\n</tool_call>"),
        ("hermes", '<tool_call>{"name": "delete_all", "arguments": {}}</tool_call>'),
    ]:
        r = every_way(name, text)
        assert r.tool_calls[0].name == "delete_all" and kinds(r) == ["unknown_tool"]


# ------------------------------------------------------------------------ names, auto, limits


def test_hermes_agent_names_and_auto() -> None:
    names = list_parsers()
    assert {"deepseek_v3_1", "deepseek_v31", "auto"} <= set(names)
    text = (
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>"
        '{"city": "Baku"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>'
    )
    assert get_parser("deepseek_v3_1", tools=TOOLS).parse(text) == get_parser("deepseek_v31", tools=TOOLS).parse(text)
    assert guess_parser(text) == "deepseek_v31"
    r = every_way("auto", "Thinking done.\n" + text)
    assert args(r) == {"city": "Baku"} and r.content == "Thinking done.\n"
    assert guess_parser("plain text, no calls") is None
    with pytest.raises(ValueError, match="auto"):
        get_parser("auto").render([{"name": "get_weather", "arguments": {}}])


@pytest.mark.parametrize("writer", ["hermes", "qwen3_coder", "glm45", "kimi_k2", "mistral", "deepseek_v3", "jamba"])
def test_auto_parses_each_format_as_that_format(writer: str) -> None:
    calls = [{"name": "get_weather", "arguments": {"city": "Nice", "days": 3}}, {"name": "area", "arguments": {}}]
    text = get_parser(writer, tools=TOOLS).render(calls, content="Checking two things.")
    assert guess_parser(text) == writer
    assert every_way("auto", text) == get_parser(writer, tools=TOOLS).parse(text)


def test_issues_are_capped_and_the_rest_counted() -> None:
    text = "x\ud800" * (MAX_ISSUES + 250)  # one invalid_unicode issue per lone surrogate
    r = get_parser("hermes").parse(text)
    assert len(r.issues) == MAX_ISSUES and r.issues_omitted == 250
    assert {i.kind for i in r.issues} == {"invalid_unicode"}
    s = get_parser("hermes").stream()
    for i in range(0, len(text), 7):
        s.feed(text[i : i + 7])
    s.finish()
    assert s.result() == r
    assert pickle.loads(pickle.dumps(r)) == r and "issues_omitted=250" in repr(r)
    assert r != ParseResult(content=r.content, issues=r.issues)


def test_repeated_parameter_keeps_the_first_value_and_loses_no_text() -> None:
    # Hypothesis found `{"path": "\u001b", "path": ""}`: a JSON reader keeps one of them.
    text = "<function=get_weather><parameter=city>\x1b\n</parameter><parameter=city>\n"
    r = every_way("qwen3_coder", text)
    assert args(r) == {"city": "\x1b"} and r.content == "<parameter=city>"
    assert "bad_arguments" in kinds(r)
