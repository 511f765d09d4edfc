"""Turn-level credit: one reward per assistant turn, combined with the outcome into per-token advantages.

A rollout's assistant turns are its model calls (``AgentResult.turns_used``); in the written
sequence each is one maximal run of trained positions (``masks != -100``). An environment gives
one reward per turn (``HermesAgentBaseEnv.compute_turn_rewards``, or the built-ins below through
``--env.turn_reward_builtins``), and the group becomes per-token ``advantages`` aligned with
``tokens``. For a group of G rollouts with outcome scores ``R_i`` and turn rewards ``r_{i,t}``
(``t = 0 .. T_i - 1``):

- outcome advantage (GRPO's group normalisation): ``A^O_i = (R_i - mean_j R_j) / std_j R_j``;
- turn credit, ``immediate``: ``c_{i,t} = r_{i,t}``; ``return_to_go``:
  ``c_{i,t} = sum_{u=t}^{T_i-1} gamma^(u-t) * r_{i,u}``;
- turn advantage, normalised over every turn of the group (all ``(i, t)`` pooled):
  ``Â_{i,t} = (c_{i,t} - mean c) / std c`` (``normalize_turns=False``: ``Â_{i,t} = c_{i,t}``);
- a trained token of turn ``t`` of rollout ``i`` gets ``A^O_i + weight * Â_{i,t}``; an untrained
  token (prompt, tool output, template text) gets ``0.0``.

``std`` is the population standard deviation; a standard deviation below ``1e-8`` (every value
the same: no signal) makes that normalised term 0. This is MT-GRPO's combination of a
turn-level and an outcome advantage (Zeng et al., "Reinforcing Multi-Turn Reasoning in LLM
Agents via Turn-Level Credit Assignment", arXiv:2505.11821), which it defines for two turns,
generalised to any number of turns with the immediate and discounted return-to-go credit of
NeMo-RL's turn-level credit assignment. atroposlib's trainers use ``advantages`` when a group
carries them, in place of the advantages they would derive from ``scores``.

A Phase-2 trajectory restarted by ``divergence_policy: warn_and_restart`` keeps only its last
turns trained; those runs are matched to the last turns (the earlier turns' tokens are untrained
there and get 0.0).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from hermes_env.errors import TurnRewardError
from hermes_env.parsers.parsed_call import ParsedToolCall
from hermes_env.trajectory import MASK

__all__ = [
    "BUILTIN_TURN_REWARDS",
    "STD_TOLERANCE",
    "TurnCredit",
    "builtin_turn_rewards",
    "check_turn_rewards",
    "failed_command_counts",
    "group_advantages",
    "parse_issue_counts",
    "repeated_call_counts",
    "tool_failure_counts",
    "turn_credits",
    "turn_spans",
]

TurnCredit = Literal["immediate", "return_to_go"]
STD_TOLERANCE = 1e-8


def turn_spans(masks: Sequence[int]) -> list[tuple[int, int]]:
    """``[start, end)`` of each maximal run of trained positions (``mask != -100``), in order."""
    spans: list[tuple[int, int]] = []
    start: int | None = None
    for i, m in enumerate(masks):
        if m != MASK and start is None:
            start = i
        elif m == MASK and start is not None:
            spans.append((start, i))
            start = None
    if start is not None:
        spans.append((start, len(masks)))
    return spans


def check_turn_rewards(rewards: Any, turns: int, *, source: str = "compute_turn_rewards") -> list[float]:
    """``rewards`` as floats, exactly one per assistant turn; TurnRewardError naming what is wrong otherwise."""
    if isinstance(rewards, str | bytes) or not isinstance(rewards, Sequence):
        raise TurnRewardError(
            f"{source} returned {type(rewards).__name__}, not a list; return one float per assistant turn "
            f"({turns} here) or None for no turn rewards"
        )
    if len(rewards) != turns:
        raise TurnRewardError(
            f"{source} returned {len(rewards)} rewards for a rollout with {turns} assistant turns; return exactly "
            "one reward per assistant turn (result.turns_used)"
        )
    out: list[float] = []
    for t, value in enumerate(rewards):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise TurnRewardError(f"{source}: the reward of turn {t} is {value!r}, not a number")
        if not math.isfinite(value):
            raise TurnRewardError(f"{source}: the reward of turn {t} is {value!r}; turn rewards must be finite")
        out.append(float(value))
    return out


def turn_credits(rewards: Sequence[float], credit: TurnCredit, gamma: float) -> list[float]:
    """``c_t``: the turn's own reward (``immediate``) or its discounted return-to-go."""
    if credit == "immediate":
        return [float(r) for r in rewards]
    if credit != "return_to_go":
        raise ValueError(f"unknown turn credit {credit!r}; use immediate or return_to_go")
    out = [0.0] * len(rewards)
    running = 0.0
    for t in range(len(rewards) - 1, -1, -1):
        running = float(rewards[t]) + gamma * running
        out[t] = running
    return out


def _normalised(values: Sequence[float]) -> list[float]:
    if not values:
        return []
    mean = sum(values) / len(values)
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
    if std < STD_TOLERANCE:
        return [0.0] * len(values)
    return [(v - mean) / std for v in values]


def group_advantages(
    scores: Sequence[float],
    masks: Sequence[Sequence[int]],
    turn_rewards: Sequence[Sequence[float]],
    *,
    credit: TurnCredit = "return_to_go",
    gamma: float = 1.0,
    weight: float = 1.0,
    normalize_turns: bool = True,
) -> list[list[float]]:
    """Per-token advantages of a group (formulas in the module docstring), one list per sequence.

    ``turn_rewards[i]`` holds one reward per assistant turn of rollout ``i``; its trained runs
    (:func:`turn_spans` of ``masks[i]``) are the last ``len(runs)`` of those turns.
    """
    if not len(scores) == len(masks) == len(turn_rewards):
        raise ValueError(
            f"scores, masks and turn_rewards must have one entry per rollout (got {len(scores)}, {len(masks)}, "
            f"{len(turn_rewards)})"
        )
    outcome = _normalised([float(s) for s in scores])
    credits = [turn_credits(r, credit, gamma) for r in turn_rewards]
    flat = [c for per_rollout in credits for c in per_rollout]
    flat_adv = _normalised(flat) if normalize_turns else flat
    advantages: list[list[float]] = []
    cursor = 0
    for i, mask in enumerate(masks):
        turn_adv = flat_adv[cursor : cursor + len(credits[i])]
        cursor += len(credits[i])
        spans = turn_spans(mask)
        if len(spans) > len(turn_adv):
            raise TurnRewardError(
                f"sequence {i} has {len(spans)} trained runs but {len(turn_adv)} turn rewards; each assistant turn "
                "must be one run of trained tokens"
            )
        row = [0.0] * len(mask)
        first_turn = len(turn_adv) - len(spans)
        for j, (start, end) in enumerate(spans):
            value = outcome[i] + weight * turn_adv[first_turn + j]
            for p in range(start, end):
                row[p] = value
        advantages.append(row)
    return advantages


# ---------------------------------------------------------------------------------------------- built-ins


def _model_turn_messages(result: Any) -> list[Mapping[str, Any]]:
    """The assistant messages the model wrote (the last ``turns_used``; earlier ones were prompt)."""
    assistant = [m for m in result.messages if m.get("role") == "assistant"]
    return assistant[len(assistant) - result.turns_used :] if result.turns_used else []


def tool_failure_counts(result: Any) -> list[int]:
    """Per turn: the tool calls that failed (any ``ToolError``: tool failed, timeout, bad arguments, ...).

    A command that ran and exited non-zero is not a ``ToolError``; ``command_failed`` counts those."""
    counts = [0] * result.turns_used
    for error in result.tool_errors:
        if 0 <= error.turn < result.turns_used:
            counts[error.turn] += 1
    return counts


def parse_issue_counts(result: Any) -> list[int]:
    """Per turn: the problems reading the model's output (malformed JSON, unknown tool, truncated call, ...)."""
    counts = [0] * result.turns_used
    for issue in result.parse_issues:
        if 0 <= issue.turn < result.turns_used:
            counts[issue.turn] += 1
    return counts


def repeated_call_counts(result: Any) -> list[int]:
    """Per turn: calls identical (name and arguments) to the call just before them, as the loop counts them."""
    counts = [0] * result.turns_used
    last: tuple[str, str] | None = None
    for t, message in enumerate(_model_turn_messages(result)):
        for index, raw in enumerate(message.get("tool_calls") or []):
            call = ParsedToolCall.from_openai(raw, index)
            signature = (call.name, call.canonical_arguments)  # the loop's repeated-call signature
            counts[t] += signature == last
            last = signature
    return counts


def failed_command_counts(result: Any) -> list[int]:
    """Per turn: tool results that report a non-zero ``exit_code`` (a ``terminal`` command that failed)."""
    counts = [0] * result.turns_used
    assistant = [i for i, m in enumerate(result.messages) if m.get("role") == "assistant"]
    turns = assistant[len(assistant) - result.turns_used :] if result.turns_used else []
    for t, index in enumerate(turns):
        for message in result.messages[index + 1 :]:
            if message.get("role") != "tool":
                break
            try:
                answer = json.loads(message.get("content") or "")
            except (TypeError, ValueError):
                continue
            if isinstance(answer, dict) and answer.get("exit_code") not in (0, None):
                counts[t] += 1
    return counts


BUILTIN_TURN_REWARDS: dict[str, Callable[[Any], list[int]]] = {
    "tool_failed": tool_failure_counts,
    "command_failed": failed_command_counts,
    "parse_issue": parse_issue_counts,
    "repeated_call": repeated_call_counts,
}


def builtin_turn_rewards(result: Any, weights: Mapping[str, float]) -> list[float]:
    """``r_t = sum over built-ins b of weights[b] * count_b(t)`` (e.g. ``{"tool_failed": -0.5}``).

    A malformed call is both a parse issue and a failed tool call, so it counts under both.
    """
    unknown = sorted(set(weights) - set(BUILTIN_TURN_REWARDS))
    if unknown:
        raise ValueError(
            f"unknown built-in turn reward(s) {', '.join(unknown)}; available: {', '.join(BUILTIN_TURN_REWARDS)}"
        )
    rewards = [0.0] * result.turns_used
    for name, weight in weights.items():
        for t, count in enumerate(BUILTIN_TURN_REWARDS[name](result)):
            rewards[t] += weight * count
    return rewards
