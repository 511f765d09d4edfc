"""hermes_env's own column: the Python API (``hermes_env.parsers``) on the shared workloads.

- whole text: ``parser.parse(text)``, best of repeated runs;
- streaming: one ``feed`` per token delta (Qwen3 token streams from :mod:`workloads`), then
  ``finish``. Reported as the mean per token over the whole stream, and over the same last-``window``
  deltas that the vLLM column times (so both columns are per-token costs at the same positions).
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


def stream(parser_name: str, ts: workloads.TokenStream, window: int, repeats: int) -> dict[str, Any]:
    """Per-token streaming cost; also checks that the streamed result equals ``parse`` of the text."""
    from hermes_env.parsers import get_parser

    parser = get_parser(parser_name, tools=workloads.TOOLS)
    deltas = ts.deltas
    n_tokens = ts.n_tokens
    start = max(len(deltas) - window, 0)
    window_tokens = sum(len(ids) for ids in ts.delta_ids[start:])
    best_total = best_window = float("inf")
    same = True
    for _ in range(max(repeats, 1)):
        s = parser.stream()
        feed = s.feed
        t0 = time.perf_counter()
        for d in deltas[:start]:
            feed(d)
        t1 = time.perf_counter()
        for d in deltas[start:]:
            feed(d)
        s.finish()
        t2 = time.perf_counter()
        best_total = min(best_total, t2 - t0)
        best_window = min(best_window, t2 - t1)
        whole_result = parser.parse(ts.text)
        streamed = s.result()
        same = same and (
            streamed.content == whole_result.content
            and [(c.name, c.arguments) for c in streamed.tool_calls]
            == [(c.name, c.arguments) for c in whole_result.tool_calls]
        )
    return {
        "tokens": n_tokens,
        "deltas": len(deltas),
        "per_token_us": best_total / max(n_tokens, 1) * 1e6,
        "window_tokens": window_tokens,
        "window_per_token_us": best_window / max(window_tokens, 1) * 1e6,
        "stream_equals_parse": same,
    }
