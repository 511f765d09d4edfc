"""Trajectory bookkeeping through the Python binding: layout, validation, extension policies."""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hermes_env.errors import TrajectoryDivergence, TrajectoryError
from hermes_env.trajectory import (
    FINISH_REASONS,
    MASK,
    Trajectory,
    TrajectoryDivergenceWarning,
    assistant_token_mask,
)
from hypothesis import given
from hypothesis import strategies as st

VOCAB = 1000


def make() -> Trajectory:
    t = Trajectory(vocab_size=VOCAB)
    t.add_prompt([1, 2, 3])
    t.add_completion([4, 5], [-0.5, -0.25], finish_reason="stop")
    return t


def snapshot(t: Trajectory) -> tuple:
    return (t.tokens, t.masks, t.logprobs, t.segments)


def test_layout_and_arrays() -> None:
    t = make()
    assert t.tokens == [1, 2, 3, 4, 5]
    assert t.masks == [MASK, MASK, MASK, 4, 5]
    assert t.logprobs == [1.0, 1.0, 1.0, -0.5, -0.25]
    assert len(t) == 5 and t.num_trained == 2 and t.last_finish_reason == "stop"
    arrays = t.to_numpy()
    assert arrays["tokens"].dtype == np.int64 and arrays["logprobs"].dtype == np.float64
    assert arrays["masks"].tolist() == t.masks
    # one copy out of Rust: the arrays own their data and are independent of later appends
    t.add_prompt([6])
    assert arrays["tokens"].tolist() == [1, 2, 3, 4, 5]


def test_scored_item_matches_atroposlib_fields() -> None:
    from atroposlib.envs.base import ScoredDataGroup, ScoredDataItem

    item = make().to_scored_item(1.5, messages=[{"role": "user", "content": "x"}])
    assert set(ScoredDataItem.__annotations__) <= set(item)
    assert item["inference_logprobs"] == [1.0, 1.0, 1.0, -0.5, -0.25]
    assert "inference_logprobs" in ScoredDataGroup.__annotations__
    assert item["scores"] == 1.5 and item["tokens"] == [1, 2, 3, 4, 5] and item["masks"][3:] == [4, 5]
    with pytest.raises(ValueError, match="finite"):
        make().to_scored_item(math.nan)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda t: t.add_completion([6, 7], [-1.0]), "2 ids and 1 logprobs.*index 1"),
        (lambda t: t.add_completion([6, -7], [-1.0, -1.0]), "index 1 is negative"),
        (lambda t: t.add_prompt([6, 7, VOCAB]), "index 2 is 1000, outside the vocabulary"),
        (lambda t: t.add_completion([6], [math.inf]), "logprob at index 0 is inf"),
        (lambda t: t.add_completion([6], [math.nan]), "logprob at index 0 is NaN"),
        (lambda t: t.extend([9, 9], "raise"), "differ at token index 0"),
        (lambda t: t.extend([1, 2, 3, 4, 5, -1]), "index 5 is negative"),
        (lambda t: t.extend([1, 2, 3, 9], "keep_raw"), "needs the new turn"),
        (lambda t: t.extend([1, 2, 3, 4, 5], "ignore"), "unknown divergence policy"),
    ],
)
def test_bad_input_raises_and_changes_nothing(call: Callable[[Trajectory], Any], match: str) -> None:
    t = make()
    before = snapshot(t)
    with pytest.raises(ValueError, match=match):
        call(t)
    assert snapshot(t) == before


# Input no sampler could produce: each raises TrajectoryError naming the argument and value, and nothing changes.
IMPOSSIBLE = [
    pytest.param(lambda t: t.add_completion([6], [5.0]), "logprob at index 0 is 5.0.*<= 0", 0, id="logprob-5.0"),
    pytest.param(lambda t: t.add_completion([6, 7], [-1.0, 1e-6]), "logprob at index 1 is 1e-6", 1, id="logprob-tiny"),
    pytest.param(lambda t: t.add_completion([6], [math.nan]), "logprob at index 0 is NaN", 0, id="logprob-nan"),
    pytest.param(lambda t: t.add_completion([6], [-math.inf]), "logprob at index 0 is -inf", 0, id="logprob-neg-inf"),
    pytest.param(
        lambda t: t.add_completion([6], [-1.0], finish_reason="banana"),
        'finish_reason "banana" is not a sampler finish reason; use one of stop, length',
        None,
        id="finish-banana",
    ),
    pytest.param(lambda t: t.add_completion([], []), "add_completion got no token ids", None, id="empty-completion"),
    pytest.param(lambda t: t.add_completion([6], []), "1 ids and 0 logprobs", 0, id="empty-logprobs"),
    pytest.param(lambda t: t.add_completion([-3], [-1.0]), "index 0 is negative \\(-3\\)", 0, id="negative-id"),
    pytest.param(lambda t: t.add_completion([VOCAB], [-1.0]), "index 0 is 1000, outside the vocabulary", 0, id="oov"),
    pytest.param(lambda t: t.add_prompt([2**40]), "outside the vocabulary", 0, id="oov-prompt"),
]


@pytest.mark.parametrize(("call", "match", "index"), IMPOSSIBLE)
def test_impossible_input_raises_trajectory_error(
    call: Callable[[Trajectory], Any], match: str, index: int | None
) -> None:
    t = make()
    before = snapshot(t)
    with pytest.raises(TrajectoryError, match=match) as info:
        call(t)
    assert isinstance(info.value, ValueError) and info.value.index == index
    assert snapshot(t) == before


def test_completion_before_any_prompt_and_bad_vocab_size_raise() -> None:
    t = Trajectory(vocab_size=VOCAB)
    with pytest.raises(TrajectoryError, match="empty trajectory.*call add_prompt"):
        t.add_completion([4, 5], [-0.5, -0.25], finish_reason="stop")
    assert len(t) == 0
    for bad in (0, -3):
        with pytest.raises(TrajectoryError, match=f"vocab_size must be a positive integer.*got {bad}"):
            Trajectory(vocab_size=bad)
    assert Trajectory(vocab_size=None).vocab_size is None


def test_every_sampler_finish_reason_is_accepted() -> None:
    assert {"stop", "length", "abort"} <= set(FINISH_REASONS)
    for reason in [*FINISH_REASONS, None]:
        t = make()
        t.add_completion([6], [0.0], finish_reason=reason)  # logprob 0.0: a certain token
        assert t.last_finish_reason == reason


@given(st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.just(0.0), st.just(-0.0)), max_size=8))
def test_logprobs_are_refused_exactly_when_not_finite_or_positive(lps: list[float]) -> None:
    t = make()
    ids = [6] * len(lps)
    bad = [i for i, x in enumerate(lps) if not math.isfinite(x) or x > 0]
    if not lps:
        with pytest.raises(TrajectoryError):
            t.add_completion(ids, lps)
        return
    if not bad:
        t.add_completion(ids, lps)
        assert t.logprobs[5:] == lps
        return
    with pytest.raises(TrajectoryError) as info:
        t.add_completion(ids, lps)
    assert info.value.index == bad[0]
    assert snapshot(t) == snapshot(make())


def test_mask_values_are_token_ids_or_minus_100() -> None:
    with pytest.raises(TrajectoryError, match="index 1 is negative \\(-7\\)") as info:
        assistant_token_mask([(0, 1), (1, 2)], [(0, 2)], [3, -7])
    assert info.value.index == 1
    with pytest.raises(TrajectoryError, match="index 1 is 10, outside the vocabulary \\(size 10\\)"):
        assistant_token_mask([(0, 1), (1, 2)], [(0, 2)], [3, 10], vocab_size=10)
    with pytest.raises(TrajectoryError, match="vocab_size must be a positive integer"):
        assistant_token_mask([(0, 1)], [(0, 1)], [3], vocab_size=0)
    assert assistant_token_mask([(0, 1), (1, 2)], [(1, 2)], [3, 9], vocab_size=10) == [MASK, 9]


def test_extension_on_token_ids_keeps_masks() -> None:
    t = make()
    out = t.extend([1, 2, 3, 4, 5, 6, 7])
    assert out["outcome"] == "extended" and out["appended"] == 2
    assert t.masks == [MASK, MASK, MASK, 4, 5, MASK, MASK]
    assert t.logprobs[3:5] == [-0.5, -0.25]
    assert t.common_prefix([1, 2, 3, 4, 5, 6, 7, 8]) == 7


def test_divergence_error_carries_index_and_window() -> None:
    t = make()
    with pytest.raises(TrajectoryDivergence) as info:
        t.extend([1, 2, 3, 4, 99, 6], decode=lambda ids: " ".join(f"t{i}" for i in ids))
    err = info.value
    assert isinstance(err, ValueError)
    assert err.index == 4
    assert err.window["ours"] == [1, 2, 3, 4, 5] and err.window["theirs"] == [1, 2, 3, 4, 99, 6]
    assert err.window["ours_text"] == "t1 t2 t3 t4 t5"
    assert "t99" in str(err)


def test_warn_and_restart_keeps_previous() -> None:
    t = make()
    with pytest.warns(TrajectoryDivergenceWarning, match="index 4"):
        out = t.extend([1, 2, 3, 4, 99], "warn_and_restart")
    assert out["outcome"] == "restarted"
    assert snapshot(out["previous"]) == snapshot(make())
    assert t.tokens == [1, 2, 3, 4, 99] and t.num_trained == 0


def test_keep_raw_appends_only_the_new_turn() -> None:
    t = make()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = t.extend([1, 2, 3, 4, 99, 6, 7], "keep_raw", new_turn=[6, 7])
    assert out["outcome"] == "kept_raw" and out["divergence"]["index"] == 4
    assert t.tokens == [1, 2, 3, 4, 5, 6, 7]
    assert t.masks == [MASK, MASK, MASK, 4, 5, MASK, MASK]


def test_fork_and_copy_are_independent() -> None:
    t = make()
    for other in (t.fork(), copy.copy(t), copy.deepcopy(t)):
        other.add_completion([9], [-1.0])
        assert len(other) == 6
    assert len(t) == 5


segments = st.lists(
    st.tuples(st.booleans(), st.lists(st.integers(0, VOCAB - 1), max_size=12)),
    max_size=15,
)


@given(segments)
def test_random_segments_keep_arrays_aligned(segs: list[tuple[bool, list[int]]]) -> None:
    t = Trajectory(vocab_size=VOCAB)
    t.add_prompt([0])
    completion_positions: set[int] = set()
    for is_completion, ids in segs:
        if is_completion and ids:
            completion_positions.update(range(len(t), len(t) + len(ids)))
            t.add_completion(ids, [-(i % 7) / 3 for i in ids], finish_reason="stop")
        else:
            t.add_prompt(ids)
    tokens, masks, logprobs = t.tokens, t.masks, t.logprobs
    assert len(tokens) == len(masks) == len(logprobs)
    for i, (tok, m, lp) in enumerate(zip(tokens, masks, logprobs, strict=True)):
        if i in completion_positions:
            assert m == tok and lp == -(tok % 7) / 3
        else:
            assert m == MASK and lp == 1.0
    arrays = t.to_numpy()
    assert arrays["tokens"].tolist() == tokens and arrays["logprobs"].tolist() == logprobs


@given(segments, st.lists(st.integers(0, VOCAB - 1), max_size=8), st.integers(0, 40))
def test_fork_independence_and_prefix_extension(segs: list[tuple[bool, list[int]]], extra: list[int], cut: int) -> None:
    t = Trajectory(vocab_size=VOCAB)
    t.add_prompt([0])
    for is_completion, ids in segs:
        if is_completion and ids:
            t.add_completion(ids, [-0.5] * len(ids))
        else:
            t.add_prompt(ids)
    before = snapshot(t)
    f = t.fork()
    out = f.extend(t.tokens + extra)
    assert out["appended"] == len(extra)
    assert snapshot(t) == before
    assert f.masks[: len(t)] == t.masks and f.masks[len(t) :] == [MASK] * len(extra)
    # A prompt that stops agreeing somewhere (or ends early) is refused under "raise".
    if len(t) > 0:
        cut = cut % len(t)
        bad = t.tokens[:cut] + [(t.tokens[cut] + 1) % VOCAB]
        with pytest.raises(TrajectoryDivergence) as info:
            t.extend(bad)
        assert info.value.index == cut
        assert snapshot(t) == before


@given(st.lists(st.integers(-5, VOCAB + 5), min_size=1, max_size=10))
def test_out_of_range_ids_name_first_bad_index(ids: list[int]) -> None:
    t = Trajectory(vocab_size=VOCAB)
    bad = [i for i, x in enumerate(ids) if x < 0 or x >= VOCAB]
    if not bad:
        t.add_prompt(ids)
        assert t.tokens == ids
        return
    t.add_prompt([0])
    with pytest.raises(TrajectoryError, match=f"index {bad[0]} ") as info:
        t.add_completion(ids, [-1.0] * len(ids))
    assert info.value.index == bad[0]
    assert t.tokens == [0]


def test_numpy_inputs_match_lists() -> None:
    a, b = make(), make()
    nxt = [1, 2, 3, 4, 5, 6, 7]
    a.extend(nxt)
    b.extend(np.array(nxt, dtype=np.int64))  # zero-copy path
    a.add_completion([8, 9], [-0.1, -0.2])
    b.add_completion(np.array([8, 9], dtype=np.int32), np.array([-0.1, -0.2])[::1])  # other dtype: converted
    assert snapshot(a) == snapshot(b)
    assert b.common_prefix(np.arange(10, dtype=np.int64)[::2]) == 0  # non-contiguous view
    with pytest.raises(ValueError, match="index 1 is negative"):
        b.add_prompt(np.array([1, -1], dtype=np.int64))
    with pytest.raises(TypeError):
        b.add_prompt("1 2 3")


def test_pickle_round_trip_and_bad_state() -> None:
    import pickle

    t = make()
    back = pickle.loads(pickle.dumps(t))
    assert snapshot(back) == snapshot(t) and back.vocab_size == VOCAB
    state = list(t.__getstate__())
    state[1] = [1, *state[1][1:]]  # a prompt position claiming to be trained
    with pytest.raises(ValueError, match="index 0"):
        Trajectory().__setstate__(tuple(state))


def test_equality_compares_contents() -> None:
    t = make()
    f = t.fork()
    assert f == t and f is not t
    f.add_prompt([7])
    assert f != t
    assert t != [1, 2, 3]


def test_add_turn_fork_at_a_length_and_ends_with() -> None:
    """What the managed server's incremental turns use: one atomic turn, a copy as it was, a tail check."""
    t = Trajectory(vocab_size=100)
    t.add_prompt([1, 2])
    t.add_turn([3], [4, 5], [-0.1, -0.2], "stop")
    assert t.tokens == [1, 2, 3, 4, 5] and t.masks == [MASK, MASK, MASK, 4, 5]
    before = t.fork()
    with pytest.raises(TrajectoryError):
        t.add_turn([6], [7], [0.5], "stop")  # a positive logprob: the prompt part is not kept either
    assert t == before
    assert t.fork(2).tokens == [1, 2] and t.fork(len(t)) == t
    with pytest.raises(TrajectoryError, match="not where an earlier add call ended"):
        t.fork(4)
    assert t.ends_with([4, 5]) and t.ends_with([]) and not t.ends_with([3, 5])
