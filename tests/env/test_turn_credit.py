"""Turn rewards and per-token advantages: hand-computed cases, validation, built-ins, alignment properties."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hermes_env.agent.loop import AgentResult, ToolError, TurnParseIssue
from hermes_env.env.turn_credit import (
    builtin_turn_rewards,
    check_turn_rewards,
    failed_command_counts,
    group_advantages,
    repeated_call_counts,
    turn_credits,
    turn_spans,
)
from hermes_env.errors import TurnRewardError
from hypothesis import given
from hypothesis import strategies as st

M = -100
# Rollout 0: two turns (positions 1-2 and 4); rollout 1: one turn (position 1).
MASKS = [[M, 5, 6, M, 7, M], [M, 8, M]]
SCORES = [1.0, 0.0]
REWARDS = [[0.0, -1.0], [0.0]]


def approx(rows: list[list[float]]) -> Any:
    return [pytest.approx(r, abs=1e-4) for r in rows]


def test_turn_spans_are_the_runs_of_trained_positions() -> None:
    assert turn_spans([M, 5, 6, M, 7, M]) == [(1, 3), (4, 5)]
    assert turn_spans([5, M, M, 6, 7]) == [(0, 1), (3, 5)]
    assert turn_spans([M, M]) == []


def test_immediate_credit_normalised_matches_the_hand_computation() -> None:
    # Outcome: mean 0.5, std 0.5 -> A^O = [1, -1]. Credits [0, -1, 0]: mean -1/3, std sqrt(2)/3,
    # so the normalised turn advantages are [1/sqrt(2), -sqrt(2), 1/sqrt(2)] = [0.7071, -1.4142, 0.7071].
    adv = group_advantages(SCORES, MASKS, REWARDS, credit="immediate")
    assert adv == approx([[0, 1.7071, 1.7071, 0, -0.4142, 0], [0, -0.2929, 0]])


def test_discounted_return_to_go_matches_the_hand_computation() -> None:
    # gamma 0.5: credits [0 + 0.5 * -1, -1] and [0] = [-0.5, -1, 0]; mean -0.5, std sqrt(1/6) = 0.40825,
    # normalised [0, -1.2247, 1.2247].
    adv = group_advantages(SCORES, MASKS, REWARDS, credit="return_to_go", gamma=0.5)
    assert adv == approx([[0, 1, 1, 0, -0.2247, 0], [0, 0.2247, 0]])


def test_unnormalised_weighted_credit() -> None:
    adv = group_advantages(SCORES, MASKS, REWARDS, credit="immediate", weight=0.5, normalize_turns=False)
    assert adv == approx([[0, 1, 1, 0, 0.5, 0], [0, -1, 0]])


def test_return_to_go_with_gamma_one_is_the_reverse_cumulative_sum() -> None:
    assert turn_credits([1.0, -2.0, 0.5], "return_to_go", 1.0) == [-0.5, -1.5, 0.5]
    assert turn_credits([1.0, -2.0, 0.5], "return_to_go", 0.0) == [1.0, -2.0, 0.5]
    assert turn_credits([1.0, -2.0], "immediate", 0.3) == [1.0, -2.0]


def test_equal_scores_and_equal_credits_give_zero_advantages() -> None:
    adv = group_advantages([1.0, 1.0], MASKS, [[0.0, 0.0], [0.0]])
    assert adv == [[0.0] * 6, [0.0] * 3]


def test_a_restarted_trajectory_matches_its_runs_to_the_last_turns() -> None:
    # Three turns, but only the last one is still trained in the written sequence.
    adv = group_advantages([1.0, 0.0], [[M, M, 9, M], [M, 4]], [[5.0, 5.0, -1.0], [0.0]], normalize_turns=False)
    assert adv == [[0.0, 0.0, 1.0 - 1.0, 0.0], [0.0, -1.0]]


def test_more_runs_than_turn_rewards_is_an_error() -> None:
    with pytest.raises(TurnRewardError, match="2 trained runs but 1 turn rewards"):
        group_advantages([0.0], [[M, 1, M, 2]], [[0.0]])


@pytest.mark.parametrize(
    ("rewards", "message"),
    [
        ([0.0, 1.0], "returned 2 rewards for a rollout with 3 assistant turns"),
        ([0.0, math.nan, 1.0], "the reward of turn 1 is nan"),
        ([0.0, math.inf, 1.0], "the reward of turn 1 is inf"),
        ([0.0, True, 1.0], "the reward of turn 1 is True, not a number"),
        ("0.5", "returned str, not a list"),
        (0.5, "returned float, not a list"),
    ],
)
def test_turn_rewards_are_validated(rewards: Any, message: str) -> None:
    with pytest.raises(TurnRewardError, match=message):
        check_turn_rewards(rewards, 3)


def test_valid_turn_rewards_become_floats() -> None:
    assert check_turn_rewards((1, -0.5, 0), 3) == [1.0, -0.5, 0.0]


def _call(command: str) -> dict[str, Any]:
    arguments = json.dumps({"command": command})
    return {"id": "c", "type": "function", "function": {"name": "terminal", "arguments": arguments}}


def _result() -> AgentResult:
    messages = [
        {"role": "user", "content": "task"},
        # An example exchange in the prompt: not a model turn.
        {"role": "assistant", "content": "", "tool_calls": [_call("ls")]},
        {"role": "tool", "tool_call_id": "c", "content": "x"},
        {"role": "user", "content": "the real task"},
        {"role": "assistant", "content": "", "tool_calls": [_call("ls")]},  # turn 0: as the example's, no repeat
        {"role": "tool", "tool_call_id": "c", "content": "x"},
        {"role": "assistant", "content": "", "tool_calls": [_call("ls"), _call("ls")]},  # turn 1: two repeats
        {"role": "tool", "tool_call_id": "c", "content": "x"},
        {"role": "tool", "tool_call_id": "c", "content": "x"},
        {"role": "assistant", "content": "", "tool_calls": [_call("cat nope")]},  # turn 2: fails, unparsable
        {"role": "tool", "tool_call_id": "c", "content": '{"output": "", "exit_code": 1, "error": null}'},
        {"role": "assistant", "content": "done"},  # turn 3
    ]
    return AgentResult(
        messages=messages,
        turns_used=4,
        finished_naturally=True,
        tool_errors=[ToolError(turn=2, tool_name="terminal", arguments="{}", kind="tool_failed", message="no")],
        parse_issues=[TurnParseIssue(turn=2, kind="malformed_json", offset=0, message="bad")],
    )


def test_builtin_turn_rewards_count_per_turn() -> None:
    result = _result()
    assert repeated_call_counts(result) == [0, 2, 0, 0]
    assert failed_command_counts(result) == [0, 0, 1, 0]
    weights = {"tool_failed": -0.5, "parse_issue": -0.25, "repeated_call": -0.1, "command_failed": -1.0}
    assert builtin_turn_rewards(result, weights) == pytest.approx([0.0, -0.2, -1.75, 0.0])
    with pytest.raises(ValueError, match="unknown built-in turn reward"):
        builtin_turn_rewards(result, {"typo": 1.0})


@st.composite
def _groups(draw: st.DrawFn) -> tuple[list[float], list[list[int]], list[list[float]]]:
    size = draw(st.integers(1, 5))
    scores, masks, rewards = [], [], []
    for _ in range(size):
        turns = draw(st.integers(0, 4))
        mask: list[int] = [M] * draw(st.integers(1, 3))
        for _ in range(turns):
            mask += [7] * draw(st.integers(1, 4)) + [M] * draw(st.integers(1, 3))
        masks.append(mask)
        extra = draw(st.integers(0, 2)) if turns else 0  # earlier turns a restart left untrained
        rewards.append(draw(st.lists(st.floats(-3, 3), min_size=turns + extra, max_size=turns + extra)))
        scores.append(draw(st.floats(-2, 2)))
    return scores, masks, rewards


@given(
    _groups(),
    st.sampled_from(["immediate", "return_to_go"]),
    st.floats(0, 1),
    st.floats(0, 2),
    st.booleans(),
)
def test_advantages_line_up_with_tokens_and_masks(
    group: tuple[list[float], list[list[int]], list[list[float]]],
    credit: Any,
    gamma: float,
    weight: float,
    normalize: bool,
) -> None:
    scores, masks, rewards = group
    adv = group_advantages(scores, masks, rewards, credit=credit, gamma=gamma, weight=weight, normalize_turns=normalize)
    assert [len(a) for a in adv] == [len(m) for m in masks]
    for row, mask in zip(adv, masks, strict=True):
        assert all(math.isfinite(v) for v in row)
        assert all(v == 0.0 for v, m in zip(row, mask, strict=True) if m == M)
        for start, end in turn_spans(mask):
            assert len(set(row[start:end])) == 1  # one value per turn
    if weight == 0.0:
        # Without turn credit the trained tokens carry the group-normalised outcome alone.
        mean = sum(scores) / len(scores)
        std = math.sqrt(sum((s - mean) ** 2 for s in scores) / len(scores))
        for row, mask, score in zip(adv, masks, scores, strict=True):
            expected = 0.0 if std < 1e-8 else (score - mean) / std
            assert all(v == pytest.approx(expected) for v, m in zip(row, mask, strict=True) if m != M)


# ------------------------------------------------------------------ through HermesAgentBaseEnv (Phase 1)


async def test_builtin_turn_rewards_become_group_advantages(make_env: Any) -> None:
    env = make_env(turn_reward_builtins='{"tool_failed": -1.0}', turn_credit="immediate")
    await env.setup()
    group, _ = await env.collect_trajectories(await env.get_next_item())
    assert group is not None
    assert [len(a) for a in group["advantages"]] == [len(t) for t in group["tokens"]]
    for adv, mask, info in zip(group["advantages"], group["masks"], group["rollout_info"], strict=True):
        assert info["turn_rewards"] == [0.0] * info["turns"]
        assert all(a == 0.0 for a, m in zip(adv, mask, strict=True) if m == M)
        assert len(turn_spans(mask)) == info["turns"]


async def test_a_wrong_turn_reward_count_drops_the_group_saying_why(make_env: Any, caplog: Any) -> None:
    from env_fixtures import TinyEnv

    class OneRewardTooMany(TinyEnv):
        def compute_turn_rewards(self, item: Any, result: AgentResult, ctx: Any) -> list[float]:
            return [0.0] * (result.turns_used + 1)

    env = make_env(env_cls=OneRewardTooMany)
    await env.setup()
    group, _ = await env.collect_trajectories(await env.get_next_item())
    assert group is None
    assert "turn_rewards_invalid" in caplog.text
    assert "returned 3 rewards for a rollout with 2 assistant turns" in caplog.text


async def test_no_turn_rewards_means_no_advantages(make_env: Any) -> None:
    env = make_env()
    await env.setup()
    group, _ = await env.collect_trajectories(await env.get_next_item())
    assert group is not None and "advantages" not in group


async def test_more_trained_runs_than_model_turns_drops_the_group_saying_why(make_env: Any, caplog: Any) -> None:
    from env_fixtures import TinyEnv

    class WithAnExampleAnswer(TinyEnv):
        def format_prompt(self, item: Any) -> list[dict[str, Any]]:
            # Phase 1 trains every assistant message, this one too, though the model did not write it.
            return [
                {"role": "user", "content": "Say hi."},
                {"role": "assistant", "content": "hi"},
                {"role": "user", "content": item["prompt"]},
            ]

    env = make_env(env_cls=WithAnExampleAnswer, turn_reward_builtins='{"tool_failed": -1}')
    await env.setup()
    group, _ = await env.collect_trajectories(await env.get_next_item())
    assert group is None
    assert "turn_rewards_invalid" in caplog.text and "trained runs but" in caplog.text
