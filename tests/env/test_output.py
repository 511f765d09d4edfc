"""GroupJsonlWriter (whole lines only) and the HTML view with visible tool calls."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hermes_env.env.output import GroupJsonlWriter, read_groups, repair_torn_tail, replace_atropos_writer, write_html
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


def test_writer_creates_the_file_only_when_a_group_is_written(tmp_path: Path) -> None:
    path = tmp_path / "never.jsonl"
    GroupJsonlWriter(path).close()
    assert not path.exists()


def test_a_write_that_fails_part_way_is_rolled_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    import hermes_env.env.output as output

    path = tmp_path / "g.jsonl"
    writer = GroupJsonlWriter(path)
    writer.write({"scores": [1.0]})
    real_write = os.write
    calls = 0

    def half_then_full_disk(fd: int, data: bytes | memoryview) -> int:
        nonlocal calls
        calls += 1
        if calls == 1:
            return real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(output.os, "write", half_then_full_disk)
    with pytest.raises(OSError, match="No space left"):
        writer.write({"scores": [0.0], "pad": "x" * 1000})
    monkeypatch.setattr(output.os, "write", real_write)
    writer.write({"scores": [0.5]})
    writer.close()
    assert [g["scores"] for g in read_groups(path)] == [[1.0], [0.5]] and path.read_text().count("\n") == 2


def test_torn_tail_is_removed_on_the_next_start(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A SIGKILL mid-write leaves part of a line; the next run on that path removes it before appending."""
    whole = json.dumps({"scores": [1.0]}) + "\n"
    path = tmp_path / "g.jsonl"
    path.write_text(whole + '{"scores": [0.0], "tok')
    assert [g["scores"] for g in read_groups(path)] == [[1.0]]  # readers skip the torn tail meanwhile
    with GroupJsonlWriter(path) as writer:
        writer.write({"scores": [0.5]})
    assert path.read_text() == whole + json.dumps({"scores": [0.5]}) + "\n"
    assert "ended with a torn line (22 bytes" in caplog.text
    assert repair_torn_tail(path) == 0 and repair_torn_tail(tmp_path / "absent.jsonl") == 0
    only_torn = tmp_path / "t.jsonl"
    only_torn.write_bytes(b"x" * 200_000)  # longer than one read block, no newline at all
    assert repair_torn_tail(only_torn) == 200_000 and only_torn.read_bytes() == b""


def test_replacing_atroposlibs_writer_leaves_no_empty_file_and_repairs_earlier_runs(tmp_path: Path) -> None:
    import jsonlines

    requested = tmp_path / "run.jsonl"
    requested.write_text('{"a": 1}\n{"torn')  # a killed earlier run
    (tmp_path / "run_1.jsonl").write_text('{"b": 2}\n{"torn')
    (tmp_path / "other_1.jsonl").write_text('{"torn')  # not this path's: left alone
    target = tmp_path / "run_2.jsonl"  # what atroposlib picks, and creates empty
    writer = replace_atropos_writer(jsonlines.open(target, "w"), requested, target)
    assert not target.exists()
    assert requested.read_text() == '{"a": 1}\n' and (tmp_path / "run_1.jsonl").read_text() == '{"b": 2}\n'
    assert (tmp_path / "other_1.jsonl").read_text() == '{"torn'
    writer.write({"c": 3})
    writer.close()
    assert read_groups(target) == [{"c": 3}]


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
    record = RolloutRecord(
        1.0, 2, 1, ("unknown_tool",), 10, 100, True, False, False,
        end_reason="stop", parse_issue_kinds=("malformed_json", "truncated", "malformed_json"), repeated_tool_calls=1,
    )  # fmt: skip
    other = RolloutRecord(0.0, 1, 0, (), 5, 50, True, False, True, end_reason="turn_limit")
    stats.add_group([record, other])
    stats.drop_group("policy_http_error")
    stats.drop_group("policy_timeout")
    stats.drop_group("policy_http_error")
    table = format_summary_table(stats.summary(), elapsed=1.5)
    rows = {line[2:].split("  ", 1)[0]: line[2:].split("  ", 1)[1].strip() for line in table.splitlines()[1:-1]}
    assert rows["groups written"] == "1" and rows["mean reward"] == "0.500" and rows["trained tokens"] == "15 of 150"
    assert rows["groups dropped"] == "3 (policy_http_error 2, policy_timeout 1)"
    assert rows["reward failures"] == "1" and rows["tool error kinds"] == '{"unknown_tool": 0.5}'
    assert rows["parse issues / rollout"] == "1.50" and rows["repeat calls / rollout"] == "0.50"
    assert rows["parse issue kinds"] == '{"malformed_json": 1.0, "truncated": 0.5}'
    assert rows["end reasons"] == "stop 1, turn_limit 1" and rows["elapsed"] == "1.5s"


def test_wandb_metrics_carry_parse_issues_end_reasons_and_drops_by_cause() -> None:
    stats = RolloutStats()
    issue = RolloutRecord(1.0, 2, 1, (), 10, 100, True, False, False, end_reason="stop", parse_issue_kinds=("x",))
    looped = RolloutRecord(0.0, 8, 8, (), 10, 100, False, False, False, end_reason="repeated_tool_calls")
    stats.add_group([issue, looped])
    stats.drop_group("sandbox_failed")
    metrics = stats.drain_metrics()
    assert metrics["train/parse_issues/x"] == 0.5 and metrics["train/parse_issues_per_rollout"] == 0.5
    assert metrics["train/end_reason/stop"] == 0.5 and metrics["train/end_reason/repeated_tool_calls"] == 0.5
    assert stats.dropped_metrics() == {"train/groups_dropped": 1.0, "train/groups_dropped/sandbox_failed": 1.0}


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
    assert stats.summary() == {
        "groups": 2,
        "groups_dropped": 0,
        "groups_dropped_by_cause": {},
        **summarize(first + second),
    }
    totals = stats.summary()
    assert totals["rollouts"] == 3 and totals["mean_reward"] == 0.5 and totals["mean_turns"] == 7 / 3
    assert totals["tool_error_kinds"] == {"malformed_json": 1 / 3, "timeout": 2 / 3}
    assert totals["finished_naturally_rate"] == 2 / 3 and totals["context_exhausted_rate"] == 1 / 3
    assert (totals["reward_failures"], totals["trained_tokens"], totals["total_tokens"]) == (1, 30, 330)
