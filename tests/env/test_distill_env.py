"""Distillation and judges through HermesAgentBaseEnv (Phase 1): a teacher failure drops the group, the
teacher is checked at start, a rubric judge's verdict goes into the score and the rollout's metadata."""

from __future__ import annotations

from typing import Any

import pytest
from hermes_env.distill import check_distill_arrays
from hermes_env.errors import EnvSetupError
from hermes_env.testing import qwen3_tokenizer, qwen3_tokenizer_dir
from hermes_env.testing.scripted_openai import ScriptedOpenAIServer
from hermes_env.testing.scripted_vllm import ScriptedVLLMServer


def test_config_refuses_hint_context_without_a_judge_and_a_rubric_judge_without_a_rubric(make_env: Any) -> None:
    with pytest.raises(ValueError, match="teacher_context 'hint' needs a judge"):
        make_env(teacher_base_url="http://127.0.0.1:9", teacher_context="hint")
    with pytest.raises(ValueError, match="judge_reward 'rubric' needs judge_rubric"):
        make_env(judge_reward="rubric", judge_base_url="http://127.0.0.1:9")
    with pytest.raises(ValueError, match="unknown built-in turn reward"):
        make_env(turn_reward_builtins='{"tool_fail": -1}')


async def test_teacher_arrays_line_up_in_phase_1(make_env: Any) -> None:
    with ScriptedVLLMServer(qwen3_tokenizer(), lambda request: "ok") as teacher:
        env = make_env(teacher_base_url=teacher.base_url, teacher_top_k=2)
        await env.setup()
        await env._check_teacher()
        group, _ = await env.collect_trajectories(await env.get_next_item())
    assert group is not None
    assert (
        check_distill_arrays(group["tokens"], group["masks"], group["distill_token_ids"], group["distill_logprobs"])
        == []
    )
    info = group["rollout_info"][0]["distill"]
    assert info["teacher_requests"] == 1 and info["teacher_tokens"] > 0 and info["hints"] == []


async def test_a_teacher_failure_drops_the_group(make_env: Any, caplog: Any) -> None:
    def broken(request: Any) -> str:
        raise LookupError("teacher is out of script")

    with ScriptedVLLMServer(qwen3_tokenizer(), broken) as teacher:
        env = make_env(teacher_base_url=teacher.base_url)
        await env.setup()
        group, _ = await env.collect_trajectories(await env.get_next_item())
    assert group is None
    assert "teacher_failed" in caplog.text and "answered HTTP 400" in caplog.text


async def test_a_teacher_is_checked_at_start(make_env: Any) -> None:
    env = make_env(teacher_base_url="http://127.0.0.1:9")
    with pytest.raises(EnvSetupError, match="the teacher cannot be used: the teacher at http://127.0.0.1:9/generate"):
        await env._check_teacher()
    with ScriptedVLLMServer(qwen3_tokenizer(), lambda request: "ok") as teacher:
        env = make_env(teacher_base_url=teacher.base_url, teacher_tokenizer_name=str(qwen3_tokenizer_dir()))
        await env._check_teacher()  # the student's own tokenizer passes


async def test_rubric_judge_score_is_added_and_kept(make_env: Any) -> None:
    with ScriptedOpenAIServer(lambda messages, tools: "Looks right.\nSCORE: 5") as judge:
        env = make_env(
            judge_reward="rubric", judge_base_url=judge.base_url, judge_rubric="The file exists.", judge_weight=2.0
        )
        await env.setup()
        group, _ = await env.collect_trajectories(await env.get_next_item())
    assert group is not None
    for score, info in zip(group["scores"], group["rollout_info"], strict=True):
        assert info["judge"]["kind"] == "rubric" and info["judge"]["replies"] == ["Looks right.\nSCORE: 5"]
        assert "The file exists." in info["judge"]["prompt"][1]["content"]
        assert info["judge"]["score"] == 0.5 and score == info["reward"]["score"]
        assert score - 2.0 * 0.5 in (0.0, 1.0)  # the task's own check, plus the weighted verdict


async def test_a_teacher_with_another_tokenizer_is_refused_at_start(make_env: Any, tmp_path: Any) -> None:
    import json
    import shutil

    other = tmp_path / "other_tokenizer"
    shutil.copytree(qwen3_tokenizer_dir(), other)
    data = json.loads((other / "tokenizer.json").read_text())
    vocab = data["model"]["vocab"]
    vocab["a"], vocab["b"] = vocab["b"], vocab["a"]  # two ids swapped: same size, other ids
    (other / "tokenizer.json").write_text(json.dumps(data))
    (other / "vocab.json").unlink()
    with ScriptedVLLMServer(qwen3_tokenizer(), lambda request: "ok") as teacher:
        env = make_env(teacher_base_url=teacher.base_url, teacher_tokenizer_name=str(other))
        with pytest.raises(EnvSetupError, match="is not the student's \\(2 token ids map to other tokens"):
            await env._check_teacher()


def test_demo_feature_flags_become_process_flags() -> None:
    import argparse
    import json

    from hermes_env.testing.demo import DEMO_TURN_REWARDS, DemoPolicy, _feature_args

    gguf = DemoPolicy("m", "http://127.0.0.1:1/v1", "model", "tok", serves_chat=True)
    scripted = DemoPolicy("s", "http://127.0.0.1:2/v1", "scripted", "tok")
    both = argparse.Namespace(turn_credit=True, distill=True)
    args = _feature_args(both, gguf)
    assert json.loads(args[args.index("--env.turn_reward_builtins") + 1]) == DEMO_TURN_REWARDS
    assert args[args.index("--env.teacher_base_url") + 1] == gguf.base_url
    assert args[args.index("--env.teacher_context") + 1] == "hint"
    assert args[args.index("--env.hint_judge_base_url") + 1] == gguf.base_url
    assert "--env.teacher_context" not in _feature_args(both, scripted)  # no chat: the student's own context
    assert _feature_args(argparse.Namespace(turn_credit=False, distill=False), gguf) == []
