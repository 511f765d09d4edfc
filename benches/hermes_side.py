"""hermes_env's own column: the Python API (``hermes_env.parsers``) on the shared workloads.

- whole text: ``parser.parse(text)``, best of repeated runs;
- streaming: one ``feed`` per token delta (Qwen3 token streams from :mod:`workloads`), then
  ``finish``. Reported as the mean per token over the whole stream, and over the same last-``window``
  deltas that the vLLM column times (so both columns are per-token costs at the same positions).
  Timed per block of deltas, best of ``repeats`` per block (see :func:`stream`).
"""

from __future__ import annotations

import time
from typing import Any

import workloads


def best_of(fn: Any, min_time: float) -> float:
    """Best wall time of ``fn()`` over runs lasting at least ``min_time`` seconds (at least 2 runs)."""
    best = float("inf")
    start = time.perf_counter()
    runs = 0
    while runs < 2 or time.perf_counter() - start < min_time:
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
        runs += 1
    return best


def whole(parser_name: str, text: str, min_time: float) -> dict[str, Any]:
    from hermes_env.parsers import get_parser

    parser = get_parser(parser_name, tools=workloads.TOOLS)
    result = parser.parse(text)
    seconds = best_of(lambda: parser.parse(text), min_time)
    return {
        "seconds": seconds,
        "mb_per_s": len(text.encode()) / seconds / 1e6,
        "tool_calls": len(result.tool_calls),
        "issues": len(result.issues),
    }


BLOCK = 1000  # deltas per timed block


def stream(parser_name: str, ts: workloads.TokenStream, window: int, repeats: int) -> dict[str, Any]:
    """Per-token streaming cost; also checks that the streamed result equals ``parse`` of the text.

    The stream is timed in blocks of :data:`BLOCK` deltas (the last ``window`` deltas are their own
    block); each block keeps its best time over ``repeats`` full streams, so a block that another
    process preempted on a busy machine does not count, while every token of the stream does.
    """
    from hermes_env.parsers import get_parser

    parser = get_parser(parser_name, tools=workloads.TOOLS)
    deltas = ts.deltas
    n_tokens = ts.n_tokens
    start = max(len(deltas) - window, 0)
    bounds = [(i, min(i + BLOCK, start)) for i in range(0, start, BLOCK)] + [(start, len(deltas))]
    window_tokens = sum(len(ids) for ids in ts.delta_ids[start:])
    best = [float("inf")] * len(bounds)
    whole_result = parser.parse(ts.text)
    same = True
    for _ in range(max(repeats, 1)):
        s = parser.stream()
        feed = s.feed
        perf = time.perf_counter
        for b, (lo, hi) in enumerate(bounds):
            t0 = perf()
            for d in deltas[lo:hi]:
                feed(d)
            if hi == len(deltas):
                s.finish()
            best[b] = min(best[b], perf() - t0)
        streamed = s.result()
        same = same and (
            streamed.content == whole_result.content
            and [(c.name, c.arguments) for c in streamed.tool_calls]
            == [(c.name, c.arguments) for c in whole_result.tool_calls]
        )
    return {
        "tokens": n_tokens,
        "deltas": len(deltas),
        "per_token_us": sum(best) / max(n_tokens, 1) * 1e6,
        "window_tokens": window_tokens,
        "window_per_token_us": best[-1] / max(window_tokens, 1) * 1e6,
        "stream_equals_parse": same,
    }
