"""The vLLM column of the benchmarks: runs INSIDE an interpreter where ``import vllm.tool_parsers`` works.

``benches/run.py --vllm-python PATH`` starts ``PATH benches/vllm_side.py --job JOB --out OUT``. The
job file names a tokenizer folder (the Qwen3 tokenizer with the formats' marker tokens added, saved
by run.py), the tool schemas, and a list of cases whose inputs (text, token-by-token deltas and
their token ids) are in files run.py wrote, so vLLM parses exactly the bytes hermes_env parses.

Method (documented again in the README's Performance section):

- ``whole``: ``parser.extract_tool_calls(text, request)`` on a fresh parser; repeated until 0.3 s
  of wall time have passed and at least 3 times (once when a run takes over 1 s); the best time
  is reported.
- ``stream``: ``parser.extract_tool_calls_streaming(previous_text, current_text, delta_text,
  previous_token_ids, current_token_ids, delta_token_ids, request)`` per token, with the arguments
  built as vLLM 0.33.0's serving layer builds them (``vllm.parser.abstract_parser.StreamState``):
  cumulative text and ids for ordinary parsers, the delta alone for ``engine_based_streaming``
  parsers. Only the parser call is timed (the serving layer's own ``previous_text + delta_text``
  copy, itself O(n) per token, is left out — in vLLM's favour).

  vLLM's ordinary parsers re-scan the whole output on every token (O(n) per token, O(n^2) per
  output), so streaming a 1 MB output token by token would take hours. Each size is therefore
  measured on a *window*: the last ``window`` deltas of the output are fed one token at a time and
  timed; everything before them is fed untimed in coarse chunks (``ff_chunk`` deltas, more when
  needed to keep it to ``ff_max_calls`` calls; engine-based parsers, which cost O(delta), get every
  token), so the parser has seen the whole prefix when the window starts. The window stops early
  once ``budget`` seconds are spent (``window_tokens`` says how many were timed). Per-token cost =
  window time / window tokens: the cost of one token at that output length. With ``full``, the
  whole output is also streamed token by token from the start and the mean per token is reported
  (for an O(n)-per-token parser about half the window's cost, as the mean position is n/2).

  Cases of one ``group`` run in increasing size; a case whose parse time (whole text; the untimed
  fast-forward for streams), extrapolated quadratically from the group's previous case, would pass
  ``max_seconds`` is skipped with that reason recorded. The full-stream check is skipped when it
  would take over 30 s.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
import traceback
from typing import Any


def _load_parser(name: str, tokenizer: Any, tools: list[Any]) -> Any:
    from vllm.tool_parsers import ToolParserManager

    cls = ToolParserManager.get_tool_parser(name)
    return cls(tokenizer, tools)


def _request(tools: list[dict[str, Any]]) -> Any:
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest

    return ChatCompletionRequest(
        model="bench", messages=[{"role": "user", "content": "go"}], tools=tools, tool_choice="auto"
    )


def _whole(make: Any, text: str, request: Any, min_time: float) -> dict[str, Any]:
    # A fresh parser per run, as the server makes one per request; construction is not timed but
    # counts towards the min_time budget (it reads the 150k-entry vocabulary).
    best = float("inf")
    runs = 0
    result = None
    start = time.perf_counter()
    while runs == 0 or (runs < 3 and best < 1.0) or (time.perf_counter() - start < min_time and runs < 1000):
        parser = make()
        t0 = time.perf_counter()
        result = parser.extract_tool_calls(text, request)
        best = min(best, time.perf_counter() - t0)
        runs += 1
    n_calls = len(result.tool_calls) if result is not None else 0
    return {"seconds": best, "runs": runs, "tool_calls": n_calls}


def _stream(
    make: Any,
    deltas: list[str],
    delta_ids: list[list[int]],
    request: Any,
    window: int,
    ff_chunk: int,
    ff_max_calls: int,
    budget: float,
    full: bool,
    full_max_seconds: float = 30.0,
) -> dict[str, Any]:
    parser = make()
    engine = bool(getattr(parser, "engine_based_streaming", False))
    n = len(deltas)
    start = max(n - window, 0)
    prev_text = ""
    prev_ids: list[int] = []

    def call(delta: str, ids: list[int]) -> None:
        nonlocal prev_text, prev_ids
        if engine:
            parser.extract_tool_calls_streaming("", delta, delta, [], ids, ids, request)
            return
        cur_text = prev_text + delta
        cur_ids = prev_ids + ids
        parser.extract_tool_calls_streaming(prev_text, cur_text, delta, prev_ids, cur_ids, ids, request)
        prev_text, prev_ids = cur_text, cur_ids

    # Untimed fast-forward to the window: every token for O(delta) engine parsers; otherwise
    # chunks of ff_chunk deltas, grown so that at most ff_max_calls O(n) calls are made.
    step = 1 if engine else max(ff_chunk, -(-start // max(ff_max_calls, 1)), 1)
    ff_t0 = time.perf_counter()
    for i in range(0, start, step):
        j = min(i + step, start)
        call("".join(deltas[i:j]), [t for ids in delta_ids[i:j] for t in ids])
    ff_seconds = time.perf_counter() - ff_t0

    # Timed window: one delta per call, only the parser call on the clock.
    timed = 0.0
    tokens = 0
    deltas_timed = 0
    for k in range(start, n):
        delta, ids = deltas[k], delta_ids[k]
        if engine:
            cur_text, cur_ids, p_text, p_ids = delta, ids, "", []
        else:
            cur_text, cur_ids, p_text, p_ids = prev_text + delta, prev_ids + ids, prev_text, prev_ids
        t0 = time.perf_counter()
        parser.extract_tool_calls_streaming(p_text, cur_text, delta, p_ids, cur_ids, ids, request)
        timed += time.perf_counter() - t0
        if not engine:
            prev_text, prev_ids = cur_text, cur_ids
        tokens += len(ids)
        deltas_timed += 1
        if timed > budget:
            break
    out: dict[str, Any] = {
        "engine_based": engine,
        "window_start_chars": len("".join(deltas[:start])),
        "window_tokens": tokens,
        "window_deltas": deltas_timed,
        "window_seconds": timed,
        "per_token_us": timed / max(tokens, 1) * 1e6,
        "fast_forward_seconds": ff_seconds,
    }
    est_full = out["per_token_us"] * 1e-6 * sum(len(i) for i in delta_ids) / 2  # mean position is n/2
    if full and est_full > full_max_seconds:
        out["full_skipped"] = f"full stream would take ~{est_full:.0f} s (> {full_max_seconds:.0f} s)"
    elif full:
        parser = make()
        prev_text, prev_ids = "", []
        total = 0.0
        for delta, ids in zip(deltas, delta_ids, strict=True):
            if engine:
                args = ("", delta, delta, [], ids, ids)
            else:
                cur_text, cur_ids = prev_text + delta, prev_ids + ids
                args = (prev_text, cur_text, delta, prev_ids, cur_ids, ids)
                prev_text, prev_ids = cur_text, cur_ids
            t0 = time.perf_counter()
            parser.extract_tool_calls_streaming(*args, request)
            total += time.perf_counter() - t0
        out["full_per_token_us"] = total / max(sum(len(i) for i in delta_ids), 1) * 1e6
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--job", required=True, help="job JSON written by benches/run.py")
    ap.add_argument("--out", required=True, help="where to write the results JSON")
    args = ap.parse_args(argv)
    logging.disable(logging.CRITICAL)  # vLLM logs a traceback per unparsable partial JSON; not what we time

    import vllm
    from transformers import AutoTokenizer
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionToolsParam

    with open(args.job, encoding="utf-8") as f:
        job = json.load(f)
    tokenizer = AutoTokenizer.from_pretrained(job["tokenizer_dir"])
    tools = [ChatCompletionToolsParam.model_validate(t) for t in job["tools"]]
    request = _request(job["tools"])
    results: dict[str, Any] = {"vllm_version": vllm.__version__, "python": sys.version.split()[0], "cases": {}}
    last: dict[str, tuple[int, float]] = {}  # group -> (input bytes, seconds) of its last run
    for case in job["cases"]:
        name = case["parser"]
        group, size = case.get("group", case["id"]), case.get("bytes", 0)
        if group in last and size:
            prev_size, prev_seconds = last[group]
            # O(n^2) is the worst growth seen in vLLM's parsers; a stream adds its bounded window.
            predicted = prev_seconds * (size / max(prev_size, 1)) ** 2 + (
                case.get("budget", 0.0) if case["mode"] == "stream" else 0.0
            )
            if predicted > case.get("max_seconds", 120.0):
                results["cases"][case["id"]] = {
                    "skipped": f"predicted {predicted:.0f} s from {prev_seconds:.1f} s at {prev_size} bytes "
                    f"(quadratic extrapolation) exceeds the {case.get('max_seconds', 120.0):.0f} s limit"
                }
                print(f"vllm {case['id']}: skipped ({results['cases'][case['id']]['skipped']})", file=sys.stderr)
                continue
        try:
            with open(case["input"], encoding="utf-8") as f:
                data = json.load(f)

            def make(name: str = name) -> Any:
                return _load_parser(name, tokenizer, tools)

            if case["mode"] == "whole":
                res = _whole(make, data["text"], request, case.get("min_time", 0.3))
                res["mb_per_s"] = len(data["text"].encode()) / res["seconds"] / 1e6
            else:
                res = _stream(
                    make,
                    data["deltas"],
                    data["delta_ids"],
                    request,
                    case.get("window", 1000),
                    case.get("ff_chunk", 64),
                    case.get("ff_max_calls", 8),
                    case.get("budget", 20.0),
                    case.get("full", False),
                )
            results["cases"][case["id"]] = res
            # Extrapolate from what grows with size: the parse itself (not parser construction,
            # not the bounded window, not the optional full-stream check).
            cost = res["seconds"] if case["mode"] == "whole" else res["fast_forward_seconds"]
            last[group] = (size, cost)
        except Exception as exc:  # a peer's failure is recorded, not fatal to the run
            results["cases"][case["id"]] = {"error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()}
        print(f"vllm {case['id']}: {json.dumps(results['cases'][case['id']])[:200]}", file=sys.stderr, flush=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(results, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
