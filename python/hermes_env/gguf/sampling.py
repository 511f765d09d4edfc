"""Sampling a token from raw logits, and the logprob reported for it.

What a trainer needs next to each sampled token is its logprob under the model's own
distribution — ``log_softmax(logits)`` at temperature 1, before temperature, top-k, top-p or
min-p reshape it. That is what vLLM reports by default (``logprobs_mode="raw_logprobs"``),
and the only number a teacher-forced recompute of the sequence can reproduce. llama.cpp's
sampler chain, in contrast, reports probabilities of the *processed* distribution (after
temperature and truncation), which differ from the model's whenever the temperature is not 1
or top-p removes mass. So the server draws from the processed distribution here and reports
``log_softmax`` of the raw logits for the token drawn.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["SamplingParams", "log_softmax", "sample_token"]

_GREEDY_BELOW = 1e-5  # vLLM's _SAMPLING_EPS
_PARTIAL = 256


@dataclass(frozen=True)
class SamplingParams:
    """The distribution to sample from; vLLM's names and meanings (``top_k <= 0``: off)."""

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    min_p: float = 0.0


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """``log(softmax(logits))`` in float64, stable for large logits."""
    x = np.asarray(logits, dtype=np.float64)
    shifted = x - np.max(x)
    return shifted - np.log(np.sum(np.exp(shifted)))


def _descending(scaled: np.ndarray, limit: int) -> np.ndarray:
    """Ids of the ``limit`` largest entries, by descending value and then ascending id (ties never depend on numpy)."""
    if limit < scaled.shape[0]:
        edge = scaled[np.argpartition(-scaled, limit - 1)[limit - 1]]
        candidates = np.flatnonzero(scaled >= edge)  # the top ``limit`` and every entry tied with the last of them
    else:
        candidates = np.arange(scaled.shape[0])
    return candidates[np.lexsort((candidates, -scaled[candidates]))][:limit]


def _truncated(scaled: np.ndarray, params: SamplingParams) -> tuple[np.ndarray, np.ndarray]:
    """The tokens min-p, top-k and top-p keep (vLLM's order), most likely first, and their renormalised odds."""
    n = scaled.shape[0]
    top = float(np.max(scaled))
    total = float(np.sum(np.exp(scaled - top)))
    limit = n if params.top_k <= 0 else min(params.top_k, n)
    if params.min_p > 0.0:
        # p >= min_p * p_max  <=>  scaled >= top + log(min_p)
        limit = min(limit, max(1, int(np.count_nonzero(scaled >= top + np.log(params.min_p)))))
    # Most of the mass sits in a few hundred tokens: sort those first, the whole vocabulary only if needed.
    order = _descending(scaled, min(limit, _PARTIAL))
    while True:
        weights = np.exp(scaled[order] - top)
        if params.top_p >= 1.0:
            keep = order.shape[0]
            if keep == limit:
                break
        else:
            mass = total if limit == n else float(np.sum(np.exp(np.partition(scaled, n - limit)[n - limit :] - top)))
            keep = int(np.searchsorted(np.cumsum(weights) / mass, params.top_p, side="left")) + 1
            # Done when the nucleus ends inside this prefix (the exact first entries of the full order).
            if order.shape[0] == limit or keep <= order.shape[0]:
                keep = min(keep, order.shape[0])
                break
        order = _descending(scaled, limit)
    probs = weights[:keep] / weights[:keep].sum()
    return order[:keep], probs


def sample_token(logits: np.ndarray, params: SamplingParams, rng: np.random.Generator) -> tuple[int, float]:
    """``(token, logprob)``: a token drawn as ``params`` say, and its logprob at temperature 1 (the model's).

    One uniform draw per token (inverse CDF), so a seeded generator gives the same tokens for the
    same logits. ``temperature`` below 1e-5 is greedy, as in vLLM.
    """
    shifted = np.asarray(logits, dtype=np.float64)
    shifted = shifted - np.max(shifted)
    weights = np.exp(shifted)
    log_z = np.log(np.sum(weights))  # the same operations as log_softmax, so the numbers are identical
    if params.temperature < _GREEDY_BELOW:
        token = int(np.argmax(shifted))
        return token, float(shifted[token] - log_z)
    u = rng.random()
    scaled = shifted if params.temperature == 1.0 else shifted / params.temperature
    if params.top_p >= 1.0 and params.top_k <= 0 and params.min_p <= 0.0:
        cum = np.cumsum(weights if params.temperature == 1.0 else np.exp(scaled))
        token = min(int(np.searchsorted(cum, u * cum[-1], side="right")), scaled.shape[0] - 1)
    else:
        ids, probs = _truncated(scaled, params)
        token = int(ids[min(int(np.searchsorted(np.cumsum(probs), u, side="right")), ids.shape[0] - 1)])
    return token, float(shifted[token] - log_z)
