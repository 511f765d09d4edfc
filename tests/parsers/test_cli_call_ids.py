"""``python -m hermes_env.parsers``: the call ids printed while streaming are the ids of the final message."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest
from hermes_env.parsers import ToolCall, get_parser, list_parsers
from hermes_env.parsers.__main__ import main

CALLS = [
    ToolCall(id="a", name="read_file", arguments='{"path": "a.py"}'),
    ToolCall(id="b", name="terminal", arguments='{"command": "ls"}'),
]


def _render(name: str) -> tuple[str, int]:
    """A raw output of ``name`` with as many of CALLS as the format holds in one turn, and how many."""
    parser = get_parser(name)
    for calls in (CALLS, CALLS[:1]):  # internlm: one call per turn
        for content in ("Looking.", None):  # llama3_json, pythonic: a tool-call turn is only the calls
            try:
                return parser.render(calls, content=content), len(calls)
            except ValueError:
                continue
    raise AssertionError(f"{name} renders none of the test calls")


@pytest.mark.parametrize("how", [[], ["--json"], ["--chunk", "3"], ["--tokenizer", "qwen3"]], ids=str)
@pytest.mark.parametrize("name", [n for n in list_parsers() if n != "auto"])  # auto writes no format of its own
def test_streamed_call_ids_are_the_final_messages(name: str, how: list[str], tmp_path: Path) -> None:
    source = tmp_path / "output.txt"
    text, n_calls = _render(name)
    source.write_text(text, encoding="utf-8")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["--parser", name, str(source), *how]) == 0
    streamed_part, _, message = out.getvalue().partition("OpenAI message:")
    final = [call["id"] for call in json.loads(message)["tool_calls"]]
    pattern = r'"id": "([^"]+)"' if "--json" in how else r"start  \S+ \(([^)]+)\)"
    assert len(final) == n_calls and re.findall(pattern, streamed_part) == final
