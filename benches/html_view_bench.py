"""Memory of writing a run's HTML view: peak RSS while the page of a large synthetic jsonl is written.

A jsonl of ``--groups`` groups (default 10,000) is generated once, each group ``--rollouts`` rollouts of
``--tokens`` tokens (random ids of the Qwen3 vocabulary, a third of them trained, with logprobs) and a
conversation of a few turns with tool output, about the shape ``process`` writes for terminal tasks. The
view is then written in a fresh Python process, which reports its RSS just before (tokenizer loaded,
nothing read yet) and its peak (``VmHWM``) after. The page shows the first ``DEFAULT_MAX_GROUPS`` groups in
full; the file is read as a stream, so the peak should not depend on ``--groups``.

Run: ``python benches/html_view_bench.py [--groups N] [--rollouts R] [--tokens T] [--keep DIR] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

MASKED = -100
VOCAB = 151_000

_CHILD = r"""
import json, sys, time
from hermes_env.html_view import write_html
from hermes_env.resources import load_tokenizer

def rss(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1]) * 1024
tok = load_tokenizer("bundled:qwen3")
before = rss("VmRSS:")
start = time.perf_counter()
out = write_html(sys.argv[1], sys.argv[2], tokenizer=tok)
print(json.dumps({"rss_before": before, "peak": rss("VmHWM:"), "seconds": time.perf_counter() - start,
                  "html_bytes": out.stat().st_size}))
"""


def _group(rng: random.Random, i: int, rollouts: int, n_tokens: int) -> dict[str, Any]:
    prompt = [rng.randrange(VOCAB) for _ in range(n_tokens // 4)]
    tokens, masks, logprobs, messages = [], [], [], []
    for r in range(rollouts):
        rest = [rng.randrange(VOCAB) for _ in range(n_tokens - len(prompt))]
        trained = [rng.random() < 0.33 for _ in rest]
        tokens.append(prompt + rest)
        masks.append([MASKED] * len(prompt) + [t if k else MASKED for t, k in zip(rest, trained, strict=True)])
        logprobs.append([1.0] * len(prompt) + [round(-rng.random(), 4) if k else 1.0 for k in trained])
        conv = [{"role": "system", "content": "You are a terminal agent."}, {"role": "user", "content": f"task {i}"}]
        for turn in range(3):
            call = {"name": "terminal", "arguments": json.dumps({"command": f"ls -la /work/{turn}"})}
            conv.append({"role": "assistant", "content": f"step {turn} of rollout {r}",
                         "tool_calls": [{"id": f"c{turn}", "type": "function", "function": call}]})  # fmt: skip
            conv.append({"role": "tool", "tool_call_id": f"c{turn}", "content": "x" * 1500 + "\n[exit code 0]"})
        conv.append({"role": "assistant", "content": "done"})
        messages.append(conv)
    infos = [{"task_id": f"task-{i % 50}", "turns": 4, "tool_calls": 3, "tool_errors": []} for _ in range(rollouts)]
    return {"tokens": tokens, "masks": masks, "inference_logprobs": logprobs,
            "scores": [float(rng.random() < 0.5) for _ in range(rollouts)], "messages": messages,
            "rollout_info": infos}  # fmt: skip


def make_jsonl(path: Path, groups: int, rollouts: int, n_tokens: int, seed: int = 0) -> int:
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as f:
        for i in range(groups):
            f.write(json.dumps(_group(rng, i, rollouts, n_tokens)) + "\n")
    return path.stat().st_size


def run(groups: int = 10_000, rollouts: int = 4, n_tokens: int = 1500, keep: Path | None = None) -> dict[str, Any]:
    work = keep or Path(tempfile.mkdtemp(prefix="hermes-html-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    jsonl = work / f"run-{groups}x{rollouts}x{n_tokens}.jsonl"
    try:
        start = time.perf_counter()
        if not jsonl.exists():
            make_jsonl(jsonl, groups, rollouts, n_tokens)
        made = time.perf_counter() - start
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "python")}
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, str(jsonl), str(work / "run.html")],
            capture_output=True, text=True, env=env, check=False, timeout=3600,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"writing the view failed: {done.stderr[-2000:]}")
        child = json.loads(done.stdout.strip().splitlines()[-1])
        mib = 1 << 20
        return {
            "groups": groups,
            "rollouts_per_group": rollouts,
            "tokens_per_rollout": n_tokens,
            "jsonl_mib": round(jsonl.stat().st_size / mib, 1),
            "generate_s": round(made, 1),
            "html_mib": round(child["html_bytes"] / mib, 1),
            "write_s": round(child["seconds"], 1),
            "rss_before_mib": round(child["rss_before"] / mib, 1),
            "peak_rss_mib": round(child["peak"] / mib, 1),
            "peak_over_before": round(child["peak"] / child["rss_before"], 2),
        }
    finally:
        if keep is None:
            for p in work.iterdir():
                p.unlink()
            work.rmdir()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--groups", type=int, default=10_000)
    p.add_argument("--rollouts", type=int, default=4)
    p.add_argument("--tokens", type=int, default=1500, help="tokens per rollout")
    p.add_argument("--keep", type=Path, help="keep (and reuse) the generated jsonl in this directory")
    p.add_argument("--json", type=Path, help="also write the result as JSON here")
    args = p.parse_args()
    result = run(args.groups, args.rollouts, args.tokens, args.keep)
    for k, v in result.items():
        print(f"{k:<22} {v}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
