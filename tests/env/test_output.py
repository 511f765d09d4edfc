"""GroupJsonlWriter (whole lines only) and the HTML view with visible tool calls."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hermes_env.env.output import GroupJsonlWriter, write_html
from hermes_env.env.stats import RolloutRecord, RolloutStats, format_summary_table, summarize


def test_writer_appends_whole_lines_and_rejects_unencodable_groups_before_writing(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "groups.jsonl"
    with GroupJsonlWriter(path) as writer:
        writer.write({"scores": [1.0], "text": "é\n"})
        with pytest.raises(TypeError):
            writer.write({"scores": [0.0], "bad": {1, 2}})  # a set is not JSON: nothing may reach the file
        writer.write({"scores": [0.5]})
        assert writer.lines_written == 2
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n") and [json.loads(line)["scores"] for line in text.splitlines()] == [[1.0], [0.5]]
    with pytest.raises(ValueError, match="closed"):
        writer.write({})


def test_html_shows_reasoning_tool_calls_and_results(tmp_path: Path) -> None:
    path = tmp_path / "g.jsonl"
    conversation = [
        {"role": "user", "content": "make a file"},
        {
            "role": "assistant",
            "content": "",
            "reasoning_content": "touch it",
            "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "terminal", "arguments": '{"command": "touch a"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c", "content": "[exit code 0]"},
        {"role": "assistant", "content": "done"},
    ]
    path.write_text(json.dumps({"scores": [1.0], "messages": [conversation], "tokens": [[1]], "masks": [[1]]}) + "\n")
    html = write_html(path).read_text()
    assert "terminal(" in html and "touch a" in html and "touch it" in html and "[exit code 0]" in html


def test_summary_table_lists_the_run() -> None:
    stats = RolloutStats()
    record = RolloutRecord(1.0, 2, 1, ("unknown_tool",), 10, 100, True, False, False)
    stats.add_group([record, RolloutRecord(0.0, 1, 0, (), 5, 50, True, False, True)])
    table = format_summary_table(stats.summary(), elapsed=1.5)
    for text in ("groups written         1", "mean reward            0.500", "trained tokens         15 of 150",
                 "reward failures        1", '"unknown_tool": 0.5', "elapsed                1.5s"):  # fmt: skip
        assert text in table


def test_run_totals_match_the_records_and_windows_drain() -> None:
    stats = RolloutStats()
    first = [RolloutRecord(1.0, 2, 3, ("timeout", "timeout"), 10, 100, True, False, False)]
    second = [
        RolloutRecord(0.5, 4, 1, ("malformed_json",), 20, 200, False, True, True, context_exhausted=True),
        RolloutRecord(0.0, 1, 0, (), 0, 30, True, False, False),
    ]
    stats.add_group(first)
    assert stats.drain_metrics()["train/mean_reward"] == 1.0
    assert stats.drain_metrics() == {}  # the window was emptied
    stats.add_group(second)
    window = stats.drain_metrics()
    assert window["train/mean_reward"] == 0.25 and window["train/tool_errors/malformed_json"] == 0.5
    assert "train/tool_errors/timeout" not in window
    assert stats.summary() == {"groups": 2, "groups_dropped": 0, **summarize(first + second)}
    totals = stats.summary()
    assert totals["rollouts"] == 3 and totals["mean_reward"] == 0.5 and totals["mean_turns"] == 7 / 3
    assert totals["tool_error_kinds"] == {"malformed_json": 1 / 3, "timeout": 2 / 3}
    assert totals["finished_naturally_rate"] == 2 / 3 and totals["context_exhausted_rate"] == 1 / 3
    assert (totals["reward_failures"], totals["trained_tokens"], totals["total_tokens"]) == (1, 30, 330)
