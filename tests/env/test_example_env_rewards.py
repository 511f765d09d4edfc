"""The example environments' rewards, driven by scripted tool calls on the local backend (Phase 1)."""

from __future__ import annotations

from typing import Any

from env_fixtures import completion
from hermes_env.env.dataset import load_rows
from hermes_env.environments.bench_eval.env import QUESTIONS_PATH, BenchEvalEnv, extract_answer, normalize
from hermes_env.environments.swe_lite.env import TASKS_PATH as SWE_TASKS
from hermes_env.environments.swe_lite.env import SweLiteEnv

SWE = {row["id"]: row for row in load_rows(str(SWE_TASKS))}


def scripted(first_calls: list[tuple[str, Any]], final: str = "Done.") -> Any:
    def policy(messages: list[dict[str, Any]], call: int) -> Any:
        if messages[-1]["role"] == "user":
            return completion(None, first_calls)
        return completion(final)

    return policy


async def _score(env: Any, item: dict[str, Any]) -> list[float]:
    await env.setup()
    env.config.group_size = 1
    group, _ = await env.collect_trajectories(item)
    assert group is not None
    return group["scores"]


async def test_swe_lite_reference_fix_passes_the_hidden_tests(make_env: Any) -> None:
    item = SWE["bank_transfer"]
    calls = [(c["name"], c["arguments"]) for c in item["solution_tool_calls"]]
    assert await _score(make_env(scripted(calls), env_cls=SweLiteEnv), item) == [1.0]


async def test_swe_lite_fake_hidden_tests_written_by_the_model_do_not_count(make_env: Any) -> None:
    item = SWE["bank_transfer"]
    fake = "import unittest\\n\\nclass T(unittest.TestCase):\\n    def test_ok(self):\\n        pass\\n"
    calls = [("terminal", {"command": f"mkdir -p hidden_tests && printf '{fake}' > hidden_tests/test_bank.py"})]
    assert await _score(make_env(scripted(calls), env_cls=SweLiteEnv), item) == [0.0]


async def test_swe_lite_repository_is_in_the_workspace(make_env: Any) -> None:
    item = SWE["bank_transfer"]
    env = make_env(scripted([("terminal", {"command": "ls"})]), env_cls=SweLiteEnv)
    await _score(env, item)
    listing = next(m["content"] for m in env.server.requests[-1]["messages"] if m["role"] == "tool")
    assert "bank.py" in listing and "hidden_tests" not in listing


async def test_bench_eval_scores_the_answer_line(make_env: Any) -> None:
    rows = load_rows(str(QUESTIONS_PATH), prompt_field="question")
    item = rows[0]
    right = make_env(
        scripted([("terminal", {"command": item["solution"]})], f"ANSWER: {item['answer']}"),
        env_cls=BenchEvalEnv,
        prompt_field="question",
    )
    assert await _score(right, item) == [1.0]
    wrong = make_env(scripted([], "ANSWER: definitely not"), env_cls=BenchEvalEnv, prompt_field="question")
    assert await _score(wrong, item) == [0.0]


def test_answer_extraction_and_normalisation() -> None:
    assert extract_answer("thinking...\nANSWER: 5") == "5"
    assert extract_answer("**Answer**: `Ben`.\nmore\nanswer: ben") == "ben"
    assert extract_answer("no answer line") is None
    assert normalize(" `Ben`. ") == normalize("ben") == "ben"
    assert normalize('"45".') == "45" and normalize("**Ben**") == "ben"
