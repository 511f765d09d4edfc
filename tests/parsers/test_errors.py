"""What the parser API raises: hermes_env.errors classes (HermesEnvError), each keeping the built-in base it
had (ValueError, TypeError), with a message naming what was wrong and what to pass instead."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hermes_env.errors import (
    ConfigError,
    CoreStateError,
    HermesEnvError,
    ParserUsageError,
    RenderError,
    RenderTypeError,
    ToolSchemaError,
    UnknownParserError,
)
from hermes_env.parsers import ISSUE_KINDS, ParseIssue, get_parser, list_parsers, parser_info


@pytest.mark.parametrize("call", [get_parser, parser_info])
def test_an_unknown_parser_name_lists_every_name(call: Callable[[str], Any]) -> None:
    with pytest.raises(UnknownParserError, match='unknown tool-call parser "nope"; use one of: ') as info:
        call("nope")
    err = info.value
    assert isinstance(err, ConfigError) and isinstance(err, HermesEnvError) and isinstance(err, ValueError)
    assert (err.name, err.available) == ("nope", tuple(list_parsers()))
    assert ", ".join(list_parsers()) in str(err)


@pytest.mark.parametrize(
    ("tools", "words"),
    [
        ([{"type": "function", "function": {}}], r'tools\[0\] has no function name; expected \{"type": "function"'),
        ("{not json", "tools is not valid JSON .*; pass a list of OpenAI tool schemas"),
        ([{"type": "function", "function": {"name": "f", "parameters": object()}}], "JSON-serialisable"),
    ],
)
def test_tools_that_are_not_tool_schemas(tools: object, words: str) -> None:
    with pytest.raises(ToolSchemaError, match=words) as info:
        get_parser("hermes", tools=tools)
    assert isinstance(info.value, ConfigError) and isinstance(info.value, ValueError)


def test_an_unknown_issue_kind_lists_the_kinds() -> None:
    with pytest.raises(ParserUsageError, match='unknown issue kind "nope"; use one of: ') as info:
        ParseIssue("nope", 0, 0, "m")  # type: ignore[arg-type]
    assert isinstance(info.value, HermesEnvError) and isinstance(info.value, ValueError)
    assert ", ".join(ISSUE_KINDS) in str(info.value)


def test_feed_after_finish_says_to_start_a_new_stream() -> None:
    stream = get_parser("hermes").stream()
    stream.finish()
    with pytest.raises(ParserUsageError, match=r"feed\(\) after finish\(\).*call parser.stream\(\)"):
        stream.feed("more")


def test_render_errors_name_the_call_and_the_shape_to_pass() -> None:
    parser = get_parser("hermes")
    with pytest.raises(RenderError, match=r"hermes cannot render this: call 0 \(f\) arguments are not valid JSON"):
        parser.render([{"name": "f", "arguments": "{broken"}])
    with pytest.raises(RenderError, match=r'tool_calls\[0\] has no "name"; pass ToolCall objects or dicts'):
        parser.render([{"arguments": "{}"}])
    with pytest.raises(RenderTypeError, match=r"tool_calls\[0\] is a int; pass ToolCall objects or dicts") as info:
        parser.render([42])
    # Still the TypeError it was, and a RenderError (a ValueError) of the tree.
    assert isinstance(info.value, TypeError) and isinstance(info.value, RenderError)
    assert issubclass(RenderError, ParserUsageError) and issubclass(RenderError, ValueError)


def test_a_poisoned_rust_object_is_a_runtime_error_of_the_tree() -> None:
    # Raised only after a Rust panic left a stream or an encoder unusable, which no input is known to cause.
    assert issubclass(CoreStateError, HermesEnvError) and issubclass(CoreStateError, RuntimeError)
