"""hermes_env.hermes_agent.environments.tool_call_parsers: upstream's registry and (content, tool_calls) answers,
parsed by hermes_env's parsers; the expected values are upstream's documented shapes for each format."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hermes_env.hermes_agent.environments import tool_call_parsers as front
from hermes_env.hermes_agent.environments.patches import apply_patches
from hermes_env.hermes_agent.environments.tool_call_parsers import (
    PARSER_REGISTRY,
    CoreToolCallParser,
    ParseResult,
    ToolCallParser,
    get_parser,
    list_parsers,
    register_parser,
)
from hermes_env.parsers import list_parsers as core_parsers
from hypothesis import given
from hypothesis import strategies as st
from openai.types.chat.chat_completion_message_tool_call import ChatCompletionMessageToolCall

UPSTREAM_NAMES = {
    "hermes": "HermesToolCallParser",
    "qwen": "QwenToolCallParser",
    "longcat": "LongcatToolCallParser",
    "mistral": "MistralToolCallParser",
    "llama3_json": "LlamaToolCallParser",
    "llama4_json": "LlamaToolCallParser",
    "deepseek_v3": "DeepSeekV3ToolCallParser",
    "deepseek_v3_1": "DeepSeekV31ToolCallParser",
    "deepseek_v31": "DeepSeekV31ToolCallParser",
    "kimi_k2": "KimiK2ToolCallParser",
    "glm45": "Glm45ToolCallParser",
    "glm47": "Glm47ToolCallParser",
    "qwen3_coder": "Qwen3CoderToolCallParser",
}

LS = '{"command": "ls /app"}'
DS_CALLS, DS_CALL, DS_SEP = "<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>"
DS_END, DS_CALLS_END = "<｜tool▁call▁end｜>", "<｜tool▁calls▁end｜>"

# (parser, raw output, expected content, expected [(name, arguments)] or None)
CASES: list[tuple[str, str, str | None, list[tuple[str, str]] | None]] = [
    (
        "hermes",
        f'Let me look.\n<tool_call>\n{{"name": "terminal", "arguments": {LS}}}\n</tool_call>',
        "Let me look.",
        [("terminal", LS)],
    ),
    (
        "hermes",
        '<tool_call>{"name":"f","arguments":{"a":1,"s":"é"}}</tool_call>\n'
        '<tool_call>{"name":"g","arguments":{}}</tool_call>',
        None,
        [("f", '{"a": 1, "s": "é"}'), ("g", "{}")],
    ),
    ("hermes", "The answer is 4.", "The answer is 4.", None),
    ("hermes", "", "", None),
    ("qwen", f'<tool_call>\n{{"name": "terminal", "arguments": {LS}}}\n</tool_call>', None, [("terminal", LS)]),
    (
        "longcat",
        f'ok <longcat_tool_call>{{"name": "terminal", "arguments": {LS}}}</longcat_tool_call>',
        "ok",
        [("terminal", LS)],
    ),
    (
        "mistral",
        '[TOOL_CALLS] [{"name": "f", "arguments": {"x": 1}}, {"name": "g", "arguments": {}}]',
        None,
        [("f", '{"x": 1}'), ("g", "{}")],
    ),
    ("mistral", 'Sure.[TOOL_CALLS]terminal{"command": "ls /app"}', "Sure.", [("terminal", LS)]),
    ("mistral", "no calls", "no calls", None),
    (
        "llama3_json",
        '{"name": "get_weather", "parameters": {"city": "Paris"}}',
        None,
        [("get_weather", '{"city": "Paris"}')],
    ),
    (
        "llama4_json",
        '<|python_tag|>{"name": "terminal", "arguments": {"command": "ls /app"}}',
        None,
        [("terminal", LS)],
    ),
    (
        "deepseek_v3",
        f"Checking.{DS_CALLS}{DS_CALL}function{DS_SEP}terminal\n```json\n{LS}\n```{DS_END}{DS_CALLS_END}",
        "Checking.",
        [("terminal", LS)],
    ),
    (
        "deepseek_v3_1",
        f"{DS_CALLS}{DS_CALL}terminal{DS_SEP}{LS}{DS_END}{DS_CALL}f{DS_SEP}{{}}{DS_END}{DS_CALLS_END}",
        None,
        [("terminal", LS), ("f", "{}")],
    ),
    (
        "kimi_k2",
        "Sure.<|tool_calls_section_begin|><|tool_call_begin|>functions.terminal:0<|tool_call_argument_begin|>"
        f"{LS}<|tool_call_end|><|tool_calls_section_end|>",
        "Sure.",
        [("terminal", LS)],
    ),
    (
        "glm45",
        "<tool_call>terminal\n<arg_key>command</arg_key>\n<arg_value>ls /app</arg_value>\n</tool_call>",
        None,
        [("terminal", LS)],
    ),
    (
        "glm47",
        "Now.<tool_call>terminal<arg_key>command</arg_key><arg_value>ls /app</arg_value></tool_call>",
        "Now.",
        [("terminal", LS)],
    ),
    (
        "qwen3_coder",
        "I'll list it.\n<tool_call>\n<function=terminal>\n<parameter=command>\nls /app\n</parameter>\n"
        "</function>\n</tool_call>",
        "I'll list it.",
        [("terminal", LS)],
    ),
]


def _shape(result: ParseResult) -> tuple[str | None, list[tuple[str, str]] | None]:
    content, calls = result
    if calls is None:
        return content, None
    for call in calls:
        assert isinstance(call, ChatCompletionMessageToolCall)
        assert call.type == "function" and call.id
    return content, [(c.function.name, c.function.arguments) for c in calls]


@pytest.mark.parametrize(("name", "text", "content", "calls"), CASES)
def test_answers_in_upstream_shape(
    name: str, text: str, content: str | None, calls: list[tuple[str, str]] | None
) -> None:
    assert _shape(get_parser(name).parse(text)) == (content, calls)


def test_kimi_keeps_the_models_call_ids() -> None:
    text = (
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.terminal:0<|tool_call_argument_begin|>"
        f"{LS}<|tool_call_end|><|tool_calls_section_end|>"
    )
    _, calls = get_parser("kimi_k2").parse(text)
    assert calls is not None and calls[0].id == "functions.terminal:0"


def test_registry_has_upstreams_names_and_classes_and_hermes_envs_other_formats() -> None:
    for name, cls_name in UPSTREAM_NAMES.items():
        cls = PARSER_REGISTRY[name]
        assert cls.__name__ == cls_name and getattr(front, cls_name) is cls
        assert issubclass(cls, ToolCallParser)
        module = cls.__module__.rsplit(".", 1)[1]
        assert module.endswith("_parser") and module != "tool_call_parsers"
    assert issubclass(front.QwenToolCallParser, front.HermesToolCallParser)
    assert issubclass(front.Glm47ToolCallParser, front.Glm45ToolCallParser)
    assert list_parsers() == sorted(PARSER_REGISTRY) == sorted(set(core_parsers()) | set(UPSTREAM_NAMES))
    pythonic = get_parser("pythonic")
    assert isinstance(pythonic, CoreToolCallParser)
    assert _shape(pythonic.parse('[terminal(command="ls /app")]')) == (None, [("terminal", LS)])
    assert get_parser("hermes") is not get_parser("hermes")


def test_unknown_name_is_a_key_error_naming_the_available_parsers() -> None:
    with pytest.raises(KeyError, match=r"Tool call parser 'nope' not found\. Available parsers: \['auto', "):
        get_parser("nope")


def test_a_parser_registered_by_the_caller_is_used() -> None:
    @register_parser("test_upper")
    class Upper(ToolCallParser):
        def parse(self, text: str) -> ParseResult:
            return text.upper(), None

    try:
        assert get_parser("test_upper").parse("hi") == ("HI", None)
        assert "test_upper" in list_parsers()
    finally:
        del PARSER_REGISTRY["test_upper"]


def test_broken_calls_keep_hermes_envs_answer_and_say_what_was_wrong() -> None:
    parser = get_parser("hermes")
    assert isinstance(parser, CoreToolCallParser)
    text = 'hi <tool_call>{"name": "f", "arguments": {"a": 1,}}</tool_call>'
    content, calls = _shape(parser.parse(text))
    assert content == "hi" and calls == [("f", '{"a": 1,}}')]  # raw text where the JSON broke
    assert [i.kind for i in parser.parse_result(text).issues] == ["malformed_json"]


def test_schema_types_parameter_text() -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "sleep",
                "parameters": {"type": "object", "properties": {"seconds": {"type": "integer"}}},
            },
        }
    ]
    text = "<tool_call>\n<function=sleep>\n<parameter=seconds>\n5\n</parameter>\n</function>\n</tool_call>"
    _, calls = front.Qwen3CoderToolCallParser(tools=tools).parse(text)
    assert calls is not None and json.loads(calls[0].function.arguments) == {"seconds": 5}


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
call_lists = st.lists(
    st.tuples(
        st.from_regex(r"[a-z_]{1,10}", fullmatch=True), st.dictionaries(st.text(max_size=6), json_values, max_size=3)
    ),
    min_size=1,
    max_size=3,
)


@given(
    name=st.sampled_from(["hermes", "qwen3_coder", "deepseek_v3_1", "kimi_k2", "mistral"]),
    calls=call_lists,
    # prose: the renderers refuse content ending in whitespace before calls (that whitespace is framing)
    content=st.none() | st.from_regex(r"[A-Za-zé.!?]( ?[A-Za-zé.!?,]){0,15}", fullmatch=True),
)
def test_rendered_calls_come_back_in_upstream_shape(
    name: str, calls: list[tuple[str, dict[str, Any]]], content: str | None
) -> None:
    if name == "qwen3_coder":  # untyped parameter text: keep to strings, which it returns as written
        calls = [(n, {k: str(v) for k, v in a.items() if k.isidentifier()}) for n, a in calls]
    from hermes_env.parsers import get_parser as core

    text = core(name).render([{"name": n, "arguments": a} for n, a in calls], content=content)
    got_content, got_calls = get_parser(name).parse(text)
    assert got_calls is not None
    assert [(c.function.name, json.loads(c.function.arguments)) for c in got_calls] == calls
    upstream_text = [json.dumps(a, ensure_ascii=False) for _, a in calls]
    assert [c.function.arguments for c in got_calls] == upstream_text
    assert got_content == ((content or "").strip() or None)


def test_apply_patches_is_idempotent_and_patches_nothing() -> None:
    import sys

    before = set(sys.modules)
    assert apply_patches() is None
    assert apply_patches() is None
    assert set(sys.modules) == before
    assert not any(m.startswith(("minisweagent", "swerex")) for m in sys.modules)
