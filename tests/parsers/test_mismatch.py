"""A configured parser that does not match the model's output is reported (issue 18, item 4)."""

from __future__ import annotations

import logging

import pytest
from hermes_env.managed.response import load_parser, parse_reply
from hermes_env.parsers import get_parser, mismatch, parser_mismatch

QWEN3_CALL = 'Let me look.\n<tool_call>\n{"name": "read_file", "arguments": {"path": "a.py"}}\n</tool_call>'
TOOLS = [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object", "properties": {}}}}]


def test_mistral_on_qwen3_output_is_a_mismatch(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mismatch, "_warned", set())  # a fresh process's memory of warnings
    result = get_parser("mistral", tools=TOOLS).parse(QWEN3_CALL)
    assert not result.tool_calls  # the silent failure: the call stays text in the answer
    with caplog.at_level(logging.WARNING, logger="hermes_env.parsers.mismatch"):
        issue = parser_mismatch("mistral", QWEN3_CALL, result)
        again = parser_mismatch("mistral", QWEN3_CALL, result)
    assert issue is not None and again == issue
    assert issue.kind == "parser_mismatch"
    assert "tool_call_parser='mistral'" in issue.message and "'hermes'" in issue.message
    warnings = [r for r in caplog.records if "tool_call_parser='mistral'" in r.getMessage()]
    assert len(warnings) == 1  # once per process per (parser, format)


@pytest.mark.parametrize(
    ("parser", "text"),
    [
        ("hermes", QWEN3_CALL),  # it parsed
        ("qwen", QWEN3_CALL),  # an alias of the same format
        ("mistral", "Just prose, no calls."),  # no other format's markers
        ("mistral", "About <tool_call> tags: they wrap calls."),  # markers, but no call in them
        ("auto", "About <tool_call> tags: they wrap calls."),
    ],
)
def test_no_mismatch(parser: str, text: str) -> None:
    assert parser_mismatch(parser, text, get_parser(parser, tools=TOOLS).parse(text)) is None


def test_the_managed_servers_reply_carries_the_issue() -> None:
    reply = parse_reply("<think>plan</think>" + QWEN3_CALL, load_parser("mistral", TOOLS))
    assert reply.reasoning == "plan" and not reply.tool_calls
    assert [i.kind for i in reply.issues] == ["parser_mismatch"]
    # The message HermesAgentLoop reads carries it, so AgentResult.parse_issues counts it.
    assert [i["kind"] for i in reply.to_openai().parse_issues] == ["parser_mismatch"]  # type: ignore[attr-defined]
    assert parse_reply(QWEN3_CALL, load_parser("hermes", TOOLS)).issues == []
