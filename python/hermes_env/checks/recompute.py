"""Teacher-forced check of written training data: do the logprobs belong to the tokens they sit next to?

``python -m hermes_env.checks.recompute GROUPS.jsonl [--model smollm2|MODEL.gguf]`` re-runs the
model over every written sequence (atroposlib ``ScoredDataGroup`` lines: ``tokens``, ``masks``,
``inference_logprobs``) and compares, at every trained position (``masks != -100``), the
written logprob with ``log_softmax`` of the model's logits for that token given everything
before it. The model must be the one that sampled the data.

What the numbers mean (SmolLM2-135M Q4_1, llama.cpp, CPU): correctly aligned tokens differ by
a few hundredths of a nat on average — the server decodes one token at a time and the
recompute reads whole sequences, and the two kernels round differently — while a trajectory
whose logprobs are one token out of step differs by several nats. A mean above
``--threshold`` (0.15) therefore means the logprobs, masks or tokens are misaligned, or
belong to another model or distribution (e.g. logprobs taken after temperature or top-p).
Exit status: 0 pass, 1 fail, 2 unreadable input.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["DEFAULT_THRESHOLD", "RecomputeReport", "SequenceCheck", "check_groups", "main", "recompute_logprobs"]

MASK = -100
DEFAULT_THRESHOLD = 0.15


@dataclass
class SequenceCheck:
    """One written sequence: where it is, how many tokens were trained, how far the logprobs are off."""

    line: int
    index: int
    trained: int
    mean_abs_diff: float
    max_abs_diff: float
    worst_position: int
    problems: list[str] = field(default_factory=list)


@dataclass
class RecomputeReport:
    sequences: list[SequenceCheck]
    threshold: float
    diffs: np.ndarray  # |written - recomputed| at every trained position, all sequences

    @property
    def trained_tokens(self) -> int:
        return int(self.diffs.shape[0])

    @property
    def mean_abs_diff(self) -> float:
        return float(self.diffs.mean()) if self.diffs.size else 0.0

    @property
    def problems(self) -> list[str]:
        return [f"line {s.line} sequence {s.index}: {p}" for s in self.sequences for p in s.problems]

    @property
    def passed(self) -> bool:
        return not self.problems and self.trained_tokens > 0 and self.mean_abs_diff <= self.threshold

    def summary(self) -> str:
        d = self.diffs
        if not d.size:
            return "no trained tokens found"
        q50, q99 = np.quantile(d, [0.5, 0.99])
        verdict = "PASS" if self.passed else "FAIL"
        return (
            f"{verdict}: {len(self.sequences)} sequences, {self.trained_tokens} trained tokens; |written - recomputed| "
            f"logprob: mean {self.mean_abs_diff:.4f} nats (threshold {self.threshold:g}), median {q50:.4f}, "
            f"p99 {q99:.4f}, max {d.max():.4f}; {int((d > 1.0).sum())} tokens off by more than 1 nat"
        )


class _Scorer:
    """Teacher-forced logprobs from llama.cpp, re-using the cache for a prefix shared with the last sequence."""

    def __init__(self, model_path: Path, n_ctx: int, threads: int | None, batch: int) -> None:
        from hermes_env.models.llama import LlamaCpp

        self.model = LlamaCpp(model_path, n_ctx=n_ctx, n_seq=1, n_batch=batch, n_threads=threads)
        self.cached: list[int] = []
        self.cached_logprobs = np.empty(0)

    def logprobs(self, tokens: Sequence[int]) -> np.ndarray:
        """``out[i] = log p(tokens[i] | tokens[:i])`` for ``i >= 1``; ``out[0] = nan``."""
        from hermes_env.models.sampling import log_softmax

        n = len(tokens)
        if n > self.model.n_ctx:
            raise ValueError(
                f"a sequence of {n} tokens is longer than the context ({self.model.n_ctx}); pass --ctx-size"
            )
        k = 0
        while k < min(n, len(self.cached)) and self.cached[k] == tokens[k]:
            k += 1
        # Logits at a position depend only on the tokens up to it, so the shared prefix's logprobs are the
        # last sequence's; re-read one shared token, whose logits score the first new one.
        start = max(0, k - 1)
        self.model.seq_rm(0, start)
        out = np.full(n, np.nan)
        out[:k] = self.cached_logprobs[:k]
        step = self.model.n_batch
        for lo in range(start, n, step):
            hi = min(n, lo + step)
            rows = self.model.decode(
                np.asarray(tokens[lo:hi], dtype=np.int32),
                np.arange(lo, hi, dtype=np.int32),
                np.zeros(hi - lo, dtype=np.int32),
                np.ones(hi - lo, dtype=np.int8),
            )
            for j, row in enumerate(rows):
                pos = lo + j
                if pos + 1 < n:
                    out[pos + 1] = log_softmax(row)[tokens[pos + 1]]
        self.cached, self.cached_logprobs = list(tokens), out
        return out

    def close(self) -> None:
        self.model.close()


def recompute_logprobs(
    model_path: str | Path, sequences: Iterable[Sequence[int]], *, threads: int | None = None
) -> list[np.ndarray]:
    """Teacher-forced ``log p(token_i | tokens_<i)`` of each sequence (``nan`` at position 0)."""
    seqs = [list(s) for s in sequences]
    scorer = _Scorer(Path(model_path), n_ctx=max((len(s) for s in seqs), default=1), threads=threads, batch=512)
    try:
        return [scorer.logprobs(s) for s in seqs]
    finally:
        scorer.close()


def _groups(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with path.open(encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                group = json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}:{number} is not JSON ({err}); pass a jsonl of ScoredDataGroups") from None
            if not isinstance(group, dict) or not isinstance(group.get("tokens"), list):
                raise ValueError(f"{path}:{number} has no 'tokens' list; pass a jsonl of ScoredDataGroups")
            yield number, group


def _check_one(
    line: int, index: int, tokens: list[int], masks: list[int], written: list[float], recomputed: np.ndarray
) -> tuple[SequenceCheck, np.ndarray]:
    problems = []
    if not len(tokens) == len(masks) == len(written):
        problems.append(f"tokens/masks/logprobs lengths differ ({len(tokens)}/{len(masks)}/{len(written)})")
        return SequenceCheck(line, index, 0, math.nan, math.nan, -1, problems), np.empty(0)
    trained = [i for i, m in enumerate(masks) if m != MASK]
    if any(masks[i] != tokens[i] for i in trained):
        problems.append("a trained position's mask is not its token id")
    if trained and trained[0] == 0:
        problems.append("position 0 is trained, but nothing can have generated the first token")
        trained = trained[1:]
    lp = np.asarray([written[i] for i in trained], dtype=np.float64)
    if lp.size and (not np.all(np.isfinite(lp)) or np.any(lp > 0)):
        problems.append("a trained position's logprob is not a finite number <= 0")
    diffs = np.abs(lp - recomputed[trained]) if trained else np.empty(0)
    worst = trained[int(np.nanargmax(diffs))] if diffs.size else -1
    check = SequenceCheck(
        line=line,
        index=index,
        trained=len(trained),
        mean_abs_diff=float(np.nanmean(diffs)) if diffs.size else 0.0,
        max_abs_diff=float(np.nanmax(diffs)) if diffs.size else 0.0,
        worst_position=worst,
        problems=problems,
    )
    return check, diffs


def check_groups(
    path: str | Path, model_path: str | Path, *, threshold: float = DEFAULT_THRESHOLD, threads: int | None = None
) -> RecomputeReport:
    """Recomputes every trained token's logprob in ``path`` (a jsonl of ScoredDataGroups) with the GGUF model."""
    path = Path(path)
    rows: list[tuple[int, int, list[int], list[int], list[float]]] = []
    for line, group in _groups(path):
        masks = group.get("masks") or []
        logprobs = group.get("inference_logprobs")
        if logprobs is None:
            raise ValueError(
                f"{path}:{line} has no inference_logprobs (Phase-1 data carries none); only Phase-2 output "
                "can be checked"
            )
        for i, tokens in enumerate(group["tokens"]):
            rows.append((line, i, list(tokens), list(masks[i]), list(logprobs[i])))
    if not rows:
        raise ValueError(f"{path} holds no sequences")
    scorer = _Scorer(Path(model_path), n_ctx=max(len(r[2]) for r in rows), threads=threads, batch=512)
    checks, all_diffs = [], []
    try:
        for line, index, tokens, masks, written in rows:
            recomputed = scorer.logprobs(tokens)
            check, diffs = _check_one(line, index, tokens, masks, written, recomputed)
            checks.append(check)
            all_diffs.append(diffs)
    finally:
        scorer.close()
    return RecomputeReport(checks, threshold, np.concatenate(all_diffs) if all_diffs else np.empty(0))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m hermes_env.checks.recompute", description=__doc__.split("\n")[0], epilog=__doc__
    )
    parser.add_argument("groups", type=Path, help="jsonl of ScoredDataGroups (e.g. data/terminal_tasks_demo.jsonl)")
    parser.add_argument("--model", default="smollm2", help="the GGUF that sampled the data (default: smollm2)")
    parser.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD, help="largest mean |diff| that passes")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads for llama.cpp")
    parser.add_argument("--verbose", "-v", action="store_true", help="one line per sequence")
    args = parser.parse_args(argv)
    from hermes_env.models import resolve_gguf

    try:
        model = resolve_gguf(args.model)
        report = check_groups(args.groups, model, threshold=args.threshold, threads=args.threads)
    except (OSError, ValueError, ModuleNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    if args.verbose:
        for s in report.sequences:
            print(
                f"line {s.line} seq {s.index}: {s.trained} trained, mean {s.mean_abs_diff:.4f}, "
                f"max {s.max_abs_diff:.4f} at position {s.worst_position}"
            )
    for problem in report.problems:
        print(f"problem: {problem}")
    print(report.summary())
    raise SystemExit(0 if report.passed else 1)


if __name__ == "__main__":
    main()
