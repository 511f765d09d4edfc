"""What ``evaluate`` says it saved is what it saved."""

from __future__ import annotations

import json
import time
from pathlib import Path

from hermes_env.env.run_modes import _saved_eval_files


def test_files_the_environment_wrote_are_named(tmp_path: Path) -> None:
    started = time.time()
    (tmp_path / "metrics.json").write_text('{"results": {}}')
    (tmp_path / "samples.jsonl").write_text("{}\n")
    said = _saved_eval_files(tmp_path, {"eval/pass_rate": 1.0}, started)
    assert said == f"saved: {tmp_path / 'metrics.json'} and {tmp_path / 'samples.jsonl'}"
    assert json.loads((tmp_path / "metrics.json").read_text()) == {"results": {}}  # not overwritten


def test_an_evaluate_that_only_returns_metrics_gets_them_saved_and_no_samples_claimed(tmp_path: Path) -> None:
    where = tmp_path / "evals"
    said = _saved_eval_files(where, {"eval/pass_rate": 0.5, "eval/total_tasks": 2}, time.time())
    assert said == f"saved: {where / 'metrics.json'} (the environment's evaluate() wrote no samples.jsonl)"
    assert json.loads((where / "metrics.json").read_text()) == {"eval/pass_rate": 0.5, "eval/total_tasks": 2}


def test_files_left_by_an_earlier_run_do_not_count(tmp_path: Path) -> None:
    (tmp_path / "samples.jsonl").write_text("{}\n")
    (tmp_path / "metrics.json").write_text("{}")
    said = _saved_eval_files(tmp_path, {"eval/x": 1}, time.time() + 60)
    assert said.endswith("(the environment's evaluate() wrote no samples.jsonl)")
    assert json.loads((tmp_path / "metrics.json").read_text()) == {"eval/x": 1}
