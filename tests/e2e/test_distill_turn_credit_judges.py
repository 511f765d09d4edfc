"""E2E: terminal_tasks with turn-level credit, on-policy distillation in the hinted context and a ranking judge,
all at once, against scripted servers (policy /generate, teacher /generate prompt_logprobs, judge chat)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from e2e_helpers import read_groups, run_env
from hermes_env.backends.bwrap import bwrap_problem
from hermes_env.distill import TeacherContext
from hermes_env.env.dataset import load_rows
from hermes_env.env.turn_credit import turn_spans
from hermes_env.environments.terminal_tasks.env import TASKS_PATH
from hermes_env.testing import qwen3_tokenizer, qwen3_tokenizer_dir
from hermes_env.testing.policies import SolutionPolicy
from hermes_env.testing.scripted_openai import ScriptedOpenAIServer
from hermes_env.testing.scripted_vllm import ScriptedVLLMServer, scripted_prompt_logprobs
from hermes_env.testing.trainer_stub import check_batch

pytestmark = pytest.mark.e2e

BACKEND = "bwrap" if bwrap_problem() is None else "local"
WEIGHTS = {"tool_failed": -1.0, "command_failed": -0.5, "parse_issue": -0.5, "repeated_call": -0.25}


def judge(messages: list[dict[str, Any]], tools: Any) -> str:
    """Hints for a turn whose tool failed; the ranking judge prefers shorter attempts."""
    system, user = messages[0]["content"], messages[-1]["content"]
    if "several attempts" in system:
        attempts = user.split("## Attempt ")[1:]
        lengths = [len(a) for a in attempts]
        return json.dumps(
            {"scores": [{"id": i + 1, "score": min(lengths) / n, "why": "shorter"} for i, n in enumerate(lengths)]}
        )
    if '"error"' in user:
        return "VERDICT: HINT\nHINT: That tool does not exist; use the terminal tool."
    return "VERDICT: NONE"


def test_terminal_tasks_writes_advantages_teacher_top_k_and_judge_verdicts(tmp_path: Path) -> None:
    out = tmp_path / "groups.jsonl"
    policy = SolutionPolicy(load_rows(str(TASKS_PATH)), seed=3, weights={"solve": 1, "typo": 2, "wrong": 1})
    tokenizer = qwen3_tokenizer()
    with (
        ScriptedVLLMServer(tokenizer, policy.vllm_responder) as server,
        ScriptedVLLMServer(tokenizer, lambda request: "ok") as teacher,
        ScriptedOpenAIServer(judge) as judge_server,
    ):
        proc = run_env(
            "hermes_env.environments.terminal_tasks", "process",
            "--openai.base_url", server.base_url, "--openai.server_type", "vllm",
            "--openai.tokenizer_name", str(qwen3_tokenizer_dir()),
            "--env.terminal_backend", BACKEND, "--env.total_steps", "3", "--env.group_size", "4",
            "--env.data_path_to_save_groups", str(out),
            "--env.turn_reward_builtins", json.dumps(WEIGHTS), "--env.turn_credit", "return_to_go",
            "--env.turn_credit_gamma", "0.9",
            "--env.teacher_base_url", teacher.base_url, "--env.teacher_top_k", "3",
            "--env.teacher_context", "hint", "--env.hint_judge_base_url", judge_server.base_url,
            "--env.hint_votes", "3",
            "--env.judge_reward", "ranking", "--env.judge_base_url", judge_server.base_url,
            "--env.judge_weight", "0.5",
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    groups = read_groups(out)
    assert len(groups) == 3
    assert check_batch(groups).problems == []
    vocab = len(tokenizer)
    different_credit = hinted = 0
    for group in groups:
        for i, info in enumerate(group["rollout_info"]):
            tokens, mask, adv = group["tokens"][i], group["masks"][i], group["advantages"][i]
            spans = turn_spans(mask)
            assert len(spans) == info["turns"] == len(info["turn_rewards"])
            values = [adv[s] for s, _ in spans]
            different_credit += len(set(values)) > 1
            # The ranking judge's verdict is kept, and its score is in the rollout's score.
            assert info["judge"]["kind"] == "ranking" and "## Attempt 1" in info["judge"]["prompt"][1]["content"]
            assert group["scores"][i] == pytest.approx(info["reward"]["score"])
            # Every trained run's teacher rows are the teacher's answer in the context written down.
            distill = info["distill"]
            assert [tuple(c["span"]) for c in distill["contexts"]] == spans
            for raw in distill["contexts"]:
                context = TeacherContext.from_json(raw)
                if context.prefix_ids is None:
                    ids, offset = tokens[: context.end], 0
                else:
                    hinted += 1
                    assert "use the terminal tool" in (context.hint or "")
                    ids, offset = (
                        [*context.prefix_ids, *tokens[context.start : context.end]],
                        len(context.prefix_ids) - context.start,
                    )
                answer = scripted_prompt_logprobs(ids, 3, vocab)
                for p in range(context.start, context.end):
                    best = sorted(answer[p + offset].items(), key=lambda kv: (-kv[1], int(kv[0])))[:3]
                    assert group["distill_token_ids"][i][p] == [int(t) for t, _ in best]
            for judgement in distill["hints"][:-1]:  # the last turn has no next state: no judge call
                assert len(judgement["votes"]) == 3 and judgement["prompt"][0]["role"] == "system"
    assert different_credit > 0, "no multi-turn rollout got different credit per turn"
    assert hinted > 0, "no turn was scored in a hinted context"
    # The HTML view carries, per trained token, its advantage and the teacher's top-1; and the judges' verdicts.
    html = (tmp_path / "groups.html").read_text()
    data = json.loads(html.split('id="token-data">', 1)[1].split("</script>", 1)[0])
    rollout = data["groups"][0]["rollouts"][0]
    trained = rollout["trained"].count("1")
    assert len(rollout["adv"]) == len(rollout["t1"]) == len(rollout["t1lp"]) == trained
    assert all(str(t) in data["text"] for t in rollout["t1"])
    assert "judge (ranking)" in html and "turn rewards" in html
