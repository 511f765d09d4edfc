"""Sampling from logits: the drawn token follows the processed distribution, the logprob is the model's (T = 1)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hermes_env.gguf.sampling import SamplingParams, _truncated, log_softmax, sample_token
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

# Logits with ties (small integers) and without, over vocabularies larger than the partial sort's 256.
logits_st = st.one_of(
    arrays(np.float32, st.integers(1, 600), elements=st.integers(-4, 4).map(float)),
    arrays(np.float32, st.integers(1, 600), elements=st.floats(-30, 30, width=32)),
)
params_st = st.builds(
    SamplingParams,
    temperature=st.sampled_from([0.3, 0.7, 1.0, 1.5]),
    top_p=st.sampled_from([0.05, 0.5, 0.9, 0.999, 1.0]),
    top_k=st.sampled_from([0, 1, 5, 300]),
    min_p=st.sampled_from([0.0, 0.05, 0.5]),
)


def reference_kept(scaled: np.ndarray, p: SamplingParams) -> tuple[list[int], np.ndarray]:
    """vLLM's order on a full sort: min-p, top-k, then top-p over the renormalised rest."""
    order = sorted(range(scaled.shape[0]), key=lambda i: (-scaled[i], i))
    probs = np.exp(scaled[order] - scaled[order[0]])
    probs /= probs.sum()
    keep = len(order)
    if p.min_p > 0:
        keep = max(1, int(np.sum(probs >= p.min_p * probs[0])))
    if p.top_k > 0:
        keep = min(keep, p.top_k)
    kept = probs[:keep] / probs[:keep].sum()
    if p.top_p < 1:
        keep = min(keep, int(np.searchsorted(np.cumsum(kept), p.top_p, side="left")) + 1)
    return order[:keep], probs[:keep] / probs[:keep].sum()


def reference_candidates(scaled: np.ndarray, p: SamplingParams) -> list[tuple[list[int], np.ndarray]]:
    """The reference's answers for top_p and for top_p nudged by 1e-9 either way: where the nucleus ends exactly
    on a cumulative probability (ties), float rounding (numpy's sums depend on memory alignment) may go either way."""
    nudged = [p] if p.top_p >= 1 else [p, replace(p, top_p=p.top_p - 1e-9), replace(p, top_p=min(1.0, p.top_p + 1e-9))]
    return [reference_kept(scaled, q) for q in nudged]


@given(logits_st, params_st)
def test_truncation_matches_a_full_sort(logits: np.ndarray, params: SamplingParams) -> None:
    scaled = log_softmax(logits) / params.temperature
    ids, probs = _truncated(scaled, params)
    matches = [want for want in reference_candidates(scaled, params) if want[0] == ids.tolist()]
    assert matches, (ids.tolist(), [c[0] for c in reference_candidates(scaled, params)])
    np.testing.assert_allclose(probs, matches[0][1], rtol=1e-9, atol=1e-12)


@given(logits_st, params_st, st.integers(0, 2**32 - 1))
# Logits 7e-19 apart: the sampler ranks them as given; log_softmax rounds the difference away.
@example(np.array([0.0, 6.880149e-19], dtype=np.float32), SamplingParams(temperature=0.3, top_p=0.05), 0)
def test_logprob_is_the_models_whatever_the_sampling(logits: np.ndarray, params: SamplingParams, seed: int) -> None:
    token, logprob = sample_token(logits, params, np.random.default_rng(seed))
    raw = log_softmax(logits)
    assert logprob == raw[token]
    assert np.isfinite(logprob) and logprob <= 0.0
    # The reference ranks what the sampler ranks: the logits (shifted by their maximum) over the temperature.
    shifted = logits.astype(np.float64) - np.max(logits.astype(np.float64))
    scaled = shifted / params.temperature
    if params.top_p < 1 or params.top_k > 0 or params.min_p > 0:
        assert any(token in kept for kept, _ in reference_candidates(scaled, params))


def test_greedy_below_vllms_epsilon() -> None:
    logits = np.array([0.0, 3.0, 3.0, -1.0], dtype=np.float32)
    for t in (0.0, 1e-6):
        token, lp = sample_token(logits, SamplingParams(temperature=t), np.random.default_rng(0))
        assert token == 1 and lp == pytest.approx(float(log_softmax(logits)[1]))


@pytest.mark.parametrize(
    "params",
    [SamplingParams(), SamplingParams(temperature=0.5), SamplingParams(top_p=0.8), SamplingParams(top_k=3)],
    ids=["t1", "t0.5", "top_p0.8", "top_k3"],
)
def test_draws_follow_the_processed_distribution(params: SamplingParams) -> None:
    logits = np.log(np.array([0.5, 0.25, 0.15, 0.06, 0.04]))
    rng = np.random.default_rng(1234)
    n = 20000
    counts = np.bincount([sample_token(logits, params, rng)[0] for _ in range(n)], minlength=5)
    scaled = log_softmax(logits) / params.temperature
    ids, probs = reference_kept(scaled, params)
    expected = np.zeros(5)
    expected[ids] = probs
    # Every token's frequency within 5 standard deviations of its probability (fixed seed: same every run).
    sd = np.sqrt(expected * (1 - expected) / n) + 1e-12
    assert np.all(np.abs(counts / n - expected) <= 5 * sd + 1e-9), (counts / n, expected)


def test_same_seed_same_tokens() -> None:
    logits = np.random.default_rng(0).normal(size=1000).astype(np.float32)
    a = [sample_token(logits, SamplingParams(top_p=0.9), np.random.default_rng(7))[0] for _ in range(3)]
    b = [sample_token(logits, SamplingParams(top_p=0.9), np.random.default_rng(7))[0] for _ in range(3)]
    assert a == b
