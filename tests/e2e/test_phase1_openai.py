"""E2E (c): Phase 1 — ``process`` against a scripted OpenAI-compatible chat server with scripted tool calls."""

from __future__ import annotations

from pathlib import Path

import pytest
from e2e_helpers import TASKS, assistant_text_of, read_groups, run_env, write_tasks
from hermes_env.testing import qwen3_tokenizer
from hermes_env.testing.policies import ScriptedTask, SolutionPolicy, expected_success
from hermes_env.testing.scripted_openai import ScriptedOpenAIServer

pytestmark = pytest.mark.e2e


def test_process_phase1_against_scripted_openai_server(tmp_path: Path) -> None:
    tasks_file = write_tasks(tmp_path / "tasks.jsonl")
    out = tmp_path / "groups.jsonl"
    policy = SolutionPolicy(TASKS, seed=3)
    with ScriptedOpenAIServer(policy.respond_to_messages) as server:
        proc = run_env(
            "hermes_env.environments.terminal_tasks",
            "process",
            "--openai.base_url", server.base_url,
            "--openai.server_type", "openai",
            "--openai.model_name", "scripted-policy",
            "--env.dataset_name", str(tasks_file),
            "--env.terminal_backend", "local",
            "--env.total_steps", "4",
            "--env.group_size", "4",
            "--env.data_path_to_save_groups", str(out),
        )  # fmt: skip
        assert server.requests, "the env never called the scripted server"
    assert proc.returncode == 0, proc.stderr[-3000:]
    groups = read_groups(out)
    assert len(groups) == 4
    tokenizer = qwen3_tokenizer()
    by_prompt = {t["prompt"]: ScriptedTask(t["id"], t["prompt"], t["solution"]) for t in TASKS}
    scores = []
    for group in groups:
        assert len(group["tokens"]) == len(group["masks"]) == len(group["scores"]) == len(group["messages"]) == 4
        assert group.get("inference_logprobs") is None  # Phase 1: the server gives no token logprobs
        for tokens, masks, score, messages in zip(
            group["tokens"], group["masks"], group["scores"], group["messages"], strict=True
        ):
            assert len(tokens) == len(masks)
            assert all(m in (-100, t) for t, m in zip(tokens, masks, strict=True))
            task = by_prompt[next(m["content"] for m in messages if m["role"] == "user")]
            assert score == (1.0 if expected_success(task, messages) else 0.0)
            trained = assistant_text_of(tokenizer, tokens, masks)
            n_assistant = sum(1 for m in messages if m["role"] == "assistant")
            assert trained.count("<|im_end|>") == n_assistant  # every assistant turn, nothing else
            assert task.prompt not in trained
            for m in messages:
                for call in m.get("tool_calls") or []:
                    assert call["function"]["name"] in trained
            scores.append(score)
    assert 0.0 in scores and 1.0 in scores  # the scripted policy both succeeds and fails
    assert out.with_suffix(".html").is_file()
    assert "mean reward" in proc.stdout and "groups written" in proc.stdout
