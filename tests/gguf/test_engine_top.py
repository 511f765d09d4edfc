"""The engine's top-k of a logprob row: the sampled token first, then the k largest, ties to the lower id."""

from __future__ import annotations

import numpy as np
from hermes_env.gguf.engine import _top
from hypothesis import given
from hypothesis import strategies as st


def _by_full_sort(logprobs: np.ndarray, token: int, k: int) -> dict[int, float]:
    out = {token: float(logprobs[token])}
    for t in np.argsort(-logprobs, kind="stable")[:k]:
        out.setdefault(int(t), float(logprobs[t]))
    return out


@given(
    st.lists(st.sampled_from([-3.0, -1.5, -1.0, -0.5, -0.25, 0.0]), min_size=1, max_size=40),
    st.integers(0, 50),
    st.data(),
)
def test_top_k_matches_a_stable_full_sort(values: list[float], k: int, data: st.DataObject) -> None:
    row = np.asarray(values, dtype=np.float32)
    token = data.draw(st.integers(0, len(values) - 1))
    assert list(_top(row, token, k).items()) == list(_by_full_sort(row, token, k).items())
