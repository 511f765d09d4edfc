"""The shipped bench_eval questions: after each item's setup, its reference inspection command prints exactly the
expected answer inside bwrap, and the answer is not sitting in the question itself."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hermes_env.backends.bwrap import BwrapBackend
from hermes_env.tools import REGISTRY, ToolCallContext

PATH = Path(__file__).resolve().parents[2] / "python" / "hermes_env" / "environments" / "bench_eval" / "questions.jsonl"
ITEMS = [json.loads(line) for line in PATH.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_shape() -> None:
    assert len(ITEMS) >= 20
    assert len({i["id"] for i in ITEMS}) == len(ITEMS)
    for it in ITEMS:
        assert set(it) >= {"id", "question", "answer", "solution", "setup"}
        assert isinstance(it["answer"], str) and it["answer"].strip() == it["answer"] and it["answer"]


@pytest.mark.parametrize("item", ITEMS, ids=[i["id"] for i in ITEMS])
async def test_reference_inspection_yields_the_answer(bwrap: BwrapBackend, item: dict[str, Any]) -> None:
    res = await bwrap.execute("q", item["setup"], 30)
    assert res.ok, f"setup failed: {res.output}"
    ctx = ToolCallContext("q", bwrap, timeout=30)
    out = json.loads(await REGISTRY.dispatch("terminal", {"command": item["solution"]}, ctx))
    assert out["exit_code"] == 0, out
    assert out["output"] == item["answer"]
    assert item["answer"] not in item["question"].split()
