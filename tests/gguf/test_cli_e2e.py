"""The commands a user runs, with the real model: `demo --policy gguf`, the recompute check, Phase 1 `process`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from gguf_helpers import run_module
from hermes_env.env.dataset import load_rows
from hermes_env.environments.terminal_tasks.env import TASKS_PATH
from hermes_env.environments.terminal_tasks.gguf_policy import GGUF_EXAMPLE_TURNS

pytestmark = [pytest.mark.gguf, pytest.mark.e2e]


def read_groups(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.timeout(900)  # the demo, then two passes of the model over its output
def test_demo_with_the_gguf_policy_passes_the_recompute_checks(smollm2: Path, tmp_path: Path) -> None:
    """The model as policy, as its own teacher (hinted context) and its own hint judge, with turn credit."""
    from hermes_env.testing.trainer_stub import check_batch

    out = tmp_path / "demo.jsonl"
    proc = run_module(
        "hermes_env.environments.terminal_tasks", "demo", "--policy", "gguf", "--groups", "1", "--group-size", "2",
        "--backend", "local", "--out", str(out), "--env.max_agent_turns", "2", "--env.max_tokens_per_turn", "40",
        "--distill", "--turn-credit", "--env.hint_votes", "1", "--env.hint_max_tokens", "40",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "SmolLM2-135M-Instruct" in proc.stderr and "groups written" in proc.stdout
    (group,) = read_groups(out)
    assert len(group["tokens"]) == len(group["inference_logprobs"]) == 2
    for messages in group["messages"]:
        # The worked exchanges sit before the task, as prompt.
        assert messages[1 : 1 + len(GGUF_EXAMPLE_TURNS)] == GGUF_EXAMPLE_TURNS
    assert check_batch([group]).problems == []
    assert len(group["advantages"]) == len(group["distill_token_ids"]) == 2
    assert all(info["distill"]["context"] == "hint" for info in group["rollout_info"])
    check = run_module("hermes_env.checks.recompute", str(out))
    assert check.returncode == 0 and "PASS" in check.stdout, check.stdout + check.stderr
    check = run_module("hermes_env.checks.recompute", "--distill", str(out))
    assert check.returncode == 0 and "PASS" in check.stdout, check.stdout + check.stderr


def test_phase1_process_against_the_openai_endpoint(gguf_server: Any, tools_tokenizer: Any, tmp_path: Path) -> None:
    task = next(t for t in load_rows(str(TASKS_PATH)) if t["id"] == "hello_file")
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(task) + "\n")
    out = tmp_path / "phase1.jsonl"
    common = [
        "--openai.base_url", gguf_server.base_url,
        "--openai.server_type", "openai",
        "--openai.model_name", gguf_server.model_name,
        "--env.tokenizer_name", str(gguf_server.tokenizer_dir),
        "--env.dataset_name", str(tasks),
        "--env.terminal_backend", "local",
        "--env.enabled_toolsets", "terminal",
        "--env.total_steps", "1",
        "--env.group_size", "2",
        "--env.max_agent_turns", "2",
        "--env.max_tokens_per_turn", "40",
        "--env.data_path_to_save_groups", str(out),
    ]  # fmt: skip
    proc = run_module("hermes_env.environments.terminal_tasks", "process", *common)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    (group,) = read_groups(out)
    assert group.get("inference_logprobs") is None  # Phase 1: no token logprobs from an OpenAI endpoint
    for tokens, masks, messages in zip(group["tokens"], group["masks"], group["messages"], strict=True):
        trained = tools_tokenizer.decode([t for t, m in zip(tokens, masks, strict=True) if m != -100])
        replies = [m for m in messages if m["role"] == "assistant"]
        assert replies and trained.count("<|im_end|>") == len(replies)  # every assistant turn, nothing else
        assert task["prompt"] not in trained
        for reply in replies:
            assert (reply.get("content") or "").strip()[:20] in trained
    # Worked example turns would be trained as if the model wrote them in Phase 1: refused, saying why.
    refused = run_module(
        "hermes_env.environments.terminal_tasks",
        "process",
        *common,
        "--env.example_turns",
        json.dumps(GGUF_EXAMPLE_TURNS),
    )
    assert refused.returncode != 0 and "example_turns work in Phase 2 only" in refused.stderr + refused.stdout
