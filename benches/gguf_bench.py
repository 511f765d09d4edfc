"""Throughput of the GGUF engine on this CPU: SmolLM2-135M-Instruct (Q4_1) through llama.cpp.

Measures, for each thread count: reading a prompt (tokens/s), generating one sequence
(tokens/s, the per-rollout speed), generating several sequences at once (total tokens/s, what
a group of rollouts gets), and the teacher-forced recompute (tokens/s). Prints a table and the
machine's load average, which on a shared machine moves these numbers a lot.

    python benches/gguf_bench.py                 # threads 1 and 2, 1/4/8 sequences
    python benches/gguf_bench.py --threads 4 8   # a laptop with more cores
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from hermes_env.checks.recompute import recompute_logprobs
from hermes_env.gguf import load_gguf_tokenizer, smollm2_gguf
from hermes_env.gguf.engine import Engine, GenerationRequest
from hermes_env.gguf.llama import LlamaCpp

GENERATE = 128


def prompt_ids(tokenizer: object, words: int) -> list[int]:
    text = " ".join(f"word{i % 97}" for i in range(words))
    rendered = tokenizer.apply_chat_template(  # type: ignore[attr-defined]
        [{"role": "user", "content": f"Summarise: {text}"}], tokenize=False, add_generation_prompt=True
    )
    return list(tokenizer.encode(rendered, add_special_tokens=False))  # type: ignore[attr-defined]


def timed(engine: Engine, requests: list[GenerationRequest]) -> tuple[float, int]:
    started = time.perf_counter()
    results = [f.result() for f in [engine.submit(r) for r in requests]]
    return time.perf_counter() - started, sum(len(s.token_ids) for r in results for s in r.samples)


def bench(threads: int, parallel: list[int]) -> list[tuple[str, float]]:
    path = smollm2_gguf()
    tokenizer = load_gguf_tokenizer(path)
    long_prompt = prompt_ids(tokenizer, 600)
    short_prompt = prompt_ids(tokenizer, 20)
    model = LlamaCpp(path, n_ctx=16384, n_seq=max(parallel), n_batch=512, n_threads=threads)
    engine = Engine(model, seed=0).start()
    rows = []
    try:
        timed(engine, [GenerationRequest(prompt=short_prompt, max_tokens=4)])  # warm-up
        # Prompt reading: a prompt no sequence has cached, one output token.
        seconds, _ = timed(engine, [GenerationRequest(prompt=long_prompt, max_tokens=1)])
        rows.append((f"read a {len(long_prompt)}-token prompt", len(long_prompt) / seconds))
        for n in parallel:
            requests = [
                GenerationRequest(prompt=[*short_prompt, 28 + i], max_tokens=GENERATE, ignore_eos=True, seed=i)
                for i in range(n)
            ]
            seconds, generated = timed(engine, requests)
            rows.append((f"generate {GENERATE} tokens x {n} sequence(s)", generated / seconds))
    finally:
        engine.stop()
        model.close()
    sequence = long_prompt + list(np.random.default_rng(0).integers(100, 40000, size=GENERATE))
    started = time.perf_counter()
    recompute_logprobs(path, [sequence], threads=threads)
    rows.append((f"recompute a {len(sequence)}-token sequence", len(sequence) / (time.perf_counter() - started)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--parallel", type=int, nargs="+", default=[1, 4, 8])
    args = parser.parse_args()
    load = os.getloadavg()
    print(f"SmolLM2-135M-Instruct Q4_1, llama.cpp (llama-cpp-python), {os.cpu_count()} CPUs, load {load[0]:.1f}")
    print(f"{'threads':>7}  {'measurement':<40} {'tokens/s':>9}")
    for threads in args.threads:
        for what, rate in bench(threads, args.parallel):
            print(f"{threads:>7}  {what:<40} {rate:>9.1f}")
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
