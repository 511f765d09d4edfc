"""What on-policy distillation costs on this CPU: teacher tokens scored per second, and its share of a rollout.

1. Teacher throughput: ``serve_gguf`` with SmolLM2-135M-Instruct (Q4_1) answers ``prompt_logprobs`` (top-k)
   for whole sequences through :class:`hermes_env.distill.TeacherClient`, one at a time and several at once.
   The sequences are fresh (no cached prefix), so this is the cost of reading every token.
2. With ``--groups FILE`` (a jsonl written with ``--env.teacher_base_url``, e.g. by ``demo --policy gguf
   --distill``): per rollout, the teacher's and hint judge's wall time against the agent loop's.

    python benches/teacher_bench.py
    python benches/teacher_bench.py --groups data/terminal_tasks_demo.jsonl --skip-throughput
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from pathlib import Path

from hermes_env.distill import TeacherClient
from hermes_env.gguf import load_gguf_tokenizer, smollm2_gguf
from hermes_env.gguf.process import GGUFServerProcess


def sequence(tokenizer: object, words: int, salt: int) -> list[int]:
    text = " ".join(f"w{(i * 7 + salt) % 211}" for i in range(words))
    rendered = tokenizer.apply_chat_template(  # type: ignore[attr-defined]
        [{"role": "user", "content": f"Copy this ({salt}): {text}"}], tokenize=False, add_generation_prompt=True
    )
    return list(tokenizer.encode(rendered, add_special_tokens=False))  # type: ignore[attr-defined]


async def throughput(base_url: str, tokenizer: object, words: int, k: int, at_once: int, rounds: int) -> float:
    client = TeacherClient(base_url, top_k=k, max_concurrency=at_once)
    rates = []
    for r in range(rounds):
        seqs = [sequence(tokenizer, words, salt=1000 * r + i) for i in range(at_once)]
        started = time.perf_counter()
        await asyncio.gather(*(client.prompt_top_k(s, list(range(1, len(s)))) for s in seqs))
        rates.append(sum(len(s) for s in seqs) / (time.perf_counter() - started))
    return statistics.median(rates)


async def plain_read(base_url: str, tokenizer: object, words: int, rounds: int) -> float:
    """The same kind of sequence read without prompt_logprobs (one token generated): the cost of the forward
    pass alone, to set the teacher's rate against."""
    import aiohttp

    rates = []
    async with aiohttp.ClientSession() as session:
        for r in range(rounds):
            ids = sequence(tokenizer, words, salt=500_000 + r)
            started = time.perf_counter()
            body = {"prompt": {"prompt_token_ids": ids}, "max_tokens": 1, "temperature": 0.0}
            async with session.post(base_url.removesuffix("/v1") + "/generate", json=body) as resp:
                resp.raise_for_status()
                await resp.read()
            rates.append(len(ids) / (time.perf_counter() - started))
    return statistics.median(rates)


def share(path: Path) -> None:
    rows = []
    for line in path.read_text().splitlines():
        group = json.loads(line)
        rows += [info for info in group.get("rollout_info") or [] if info.get("distill")]
    if not rows:
        raise SystemExit(f"{path} has no rollout with rollout_info.distill; write it with a teacher")
    teacher_tokens = sum(r["distill"]["teacher_tokens"] for r in rows)
    teacher_s = sum(r["distill"]["teacher_seconds"] for r in rows)
    hint_s = sum(r["distill"]["hint_seconds"] for r in rows)
    loop_s = sum(r["loop_seconds"] for r in rows)
    turns = sum(r["turns"] for r in rows)
    hinted = sum(1 for r in rows for c in r["distill"]["contexts"] if c["prefix_ids"] is not None)
    judged = sum(1 for r in rows for h in r["distill"]["hints"] if h["votes"])
    print(f"{path}: {len(rows)} rollouts, {turns} turns ({judged} judged, {hinted} hinted)")
    print(f"  agent loop      {loop_s:8.1f} s   ({loop_s / turns:.1f} s a turn)")
    print(f"  hint judge      {hint_s:8.1f} s   ({hint_s / turns:.1f} s a turn, {hint_s / loop_s:.0%} of the loop)")
    print(
        f"  teacher scoring {teacher_s:8.1f} s   ({teacher_s / turns:.1f} s a turn, {teacher_s / loop_s:.0%} of the "
        f"loop; {teacher_tokens} tokens read, {teacher_tokens / max(teacher_s, 1e-9):.0f} tokens/s while sharing the "
        "server with the policy)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--words", type=int, nargs="+", default=[100, 400])
    parser.add_argument("--at-once", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--groups", type=Path, default=None, help="a jsonl written with a teacher")
    parser.add_argument("--skip-throughput", action="store_true")
    args = parser.parse_args()
    if not args.skip_throughput:
        model = smollm2_gguf()
        tokenizer = load_gguf_tokenizer(model)
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; top-{args.top_k}")
        with GGUFServerProcess(model, chat_template="smollm2-tools", args=["--parallel", "8"]) as server:
            for words in args.words:
                length = len(sequence(tokenizer, words, 0))
                rate = asyncio.run(plain_read(server.base_url, tokenizer, words, args.rounds))
                print(f"  {length:5d}-token sequences, read without prompt_logprobs: {rate:7.0f} tokens/s")
                for at_once in args.at_once:
                    rate = asyncio.run(throughput(server.base_url, tokenizer, words, args.top_k, at_once, args.rounds))
                    print(f"  {length:5d}-token sequences, {at_once} at once: {rate:7.0f} teacher tokens/s")
    if args.groups is not None:
        share(args.groups)


if __name__ == "__main__":
    main()
