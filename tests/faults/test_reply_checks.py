"""check_reply (the managed server's check of a /generate reply) against a reference written here."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hermes_env.errors import PolicyCallError
from hermes_env.managed.reply_checks import check_reply
from hypothesis import given
from hypothesis import strategies as st

VOCAB = 50
SENT = [1, 2, 3]

ids = st.one_of(st.integers(-3, VOCAB + 3), st.just(True), st.floats(0, 10))
logprobs = st.one_of(st.floats(-20, 0), st.floats(allow_nan=True, allow_infinity=True), st.just("x"))
samples = st.lists(st.lists(st.tuples(ids, logprobs), max_size=5), min_size=1, max_size=3)
finishes = st.lists(st.sampled_from(["stop", "length", "abort", "banana", None, {"type": "stop"}]), max_size=3)


def reference_ok(sample_list: list[list[tuple[Any, Any]]], finish_list: list[Any]) -> bool:
    for i, sample in enumerate(sample_list):
        if not sample:
            return False
        for t, lp in sample:
            if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < VOCAB:
                return False
            if isinstance(lp, bool) or not isinstance(lp, int | float) or not math.isfinite(lp) or lp > 0:
                return False
        raw = finish_list[i] if i < len(finish_list) else None
        finish = raw.get("type") if isinstance(raw, dict) else (raw or "stop")
        if finish not in ("stop", "length"):
            return False
    return True


@given(samples, finishes)
def test_a_reply_is_accepted_exactly_when_a_sampler_could_have_produced_it(
    sample_list: list[list[tuple[Any, Any]]], finish_list: list[Any]
) -> None:
    outputs = [[t for t, _ in s] for s in sample_list]
    lps = [[lp for _, lp in s] for s in sample_list]
    if reference_ok(sample_list, finish_list):
        reply = check_reply(SENT, (SENT, outputs, lps, finish_list), VOCAB)
        assert reply.outputs == outputs and reply.logprobs == lps
        assert all(f in ("stop", "length") for f in reply.finish_reasons)
    else:
        with pytest.raises(PolicyCallError) as info:
            check_reply(SENT, (SENT, outputs, lps, finish_list), VOCAB)
        assert info.value.kind == "policy_bad_response"


@pytest.mark.parametrize(
    ("reply", "match"),
    [
        pytest.param(([9, 9], [[1]], [[-0.1]], ["stop"]), "different prompt", id="prompt-rewritten"),
        pytest.param((SENT, [], [], []), "no completions", id="no-completions"),
        pytest.param((SENT, [[1]], None, ["stop"]), "but no logprobs", id="no-logprobs"),
        pytest.param((SENT, [[1], [2]], [[-0.1]], ["stop"]), "2 completions but 1 logprob lists", id="fewer-lists"),
        pytest.param((SENT, [[1, 2]], [[-0.1]], ["stop"]), "2 token ids but 1 logprobs", id="fewer-logprobs"),
        pytest.param(("not a tuple"), "is not \\(prompt_tokens", id="shape"),
    ],
)
def test_replies_that_do_not_line_up_are_refused(reply: Any, match: str) -> None:
    with pytest.raises(PolicyCallError, match=match) as info:
        check_reply(SENT, reply, VOCAB)
    assert info.value.kind == "policy_bad_response"
