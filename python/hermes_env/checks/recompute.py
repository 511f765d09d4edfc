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

``--distill`` checks the teacher's arrays instead (``distill_token_ids`` / ``distill_logprobs``,
written with a GGUF teacher): every trained run is scored again in the context it was written
with (``rollout_info[i]["distill"]["contexts"]``: the sequence's own tokens, or the hinted
prefix), and at every trained position the written top-k ids' logprobs are compared with the
recomputed ones (same threshold), the written top-1 with the recomputed top-1 (reported), and
every untrained position must hold the filler (token 0, logprob 0.0).
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

__all__ = [
    "DEFAULT_THRESHOLD",
    "DistillReport",
    "RecomputeReport",
    "SequenceCheck",
    "check_distill",
    "check_groups",
    "main",
    "recompute_logprobs",
]

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
        from hermes_env.gguf.llama import LlamaCpp

        self.model = LlamaCpp(model_path, n_ctx=n_ctx, n_seq=1, n_batch=batch, n_threads=threads)
        self.cached: list[int] = []
        self.cached_logprobs = np.empty(0)

    def logprobs(self, tokens: Sequence[int]) -> np.ndarray:
        """``out[i] = log p(tokens[i] | tokens[:i])`` for ``i >= 1``; ``out[0] = nan``."""
        from hermes_env.gguf.sampling import log_softmax

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
        for pos, row in self._decoded(tokens, start):
            if pos + 1 < n:
                out[pos + 1] = log_softmax(row)[tokens[pos + 1]]
        self.cached, self.cached_logprobs = list(tokens), out
        return out

    def rows(self, tokens: Sequence[int], positions: Sequence[int]) -> dict[int, np.ndarray]:
        """``log_softmax`` of the logits that predict ``tokens[p]`` (from ``tokens[:p]``), for each ``p``."""
        from hermes_env.gguf.sampling import log_softmax

        n = len(tokens)
        if n > self.model.n_ctx:
            raise ValueError(
                f"a sequence of {n} tokens is longer than the context ({self.model.n_ctx}); pass --ctx-size"
            )
        wanted = {p - 1 for p in positions}
        self.model.seq_rm(0, 0)
        self.cached, self.cached_logprobs = [], np.empty(0)
        return {pos + 1: log_softmax(row) for pos, row in self._decoded(tokens, 0) if pos in wanted}

    def _decoded(self, tokens: Sequence[int], start: int) -> Iterator[tuple[int, np.ndarray]]:
        """Decode ``tokens[start:]`` (the cache holds ``tokens[:start]``) a batch at a time: each position with
        the logits that predict the token after it."""
        n, step = len(tokens), self.model.n_batch
        for lo in range(start, n, step):
            hi = min(n, lo + step)
            rows = self.model.decode(
                np.asarray(tokens[lo:hi], dtype=np.int32),
                np.arange(lo, hi, dtype=np.int32),
                np.zeros(hi - lo, dtype=np.int32),
                np.ones(hi - lo, dtype=np.int8),
            )
            for j, row in enumerate(rows):
                yield lo + j, row

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


@dataclass
class DistillReport:
    """The teacher's written top-k against a recomputation, over every trained position."""

    threshold: float
    diffs: np.ndarray  # |written - recomputed| logprob of every written top-k entry
    positions: int = 0
    top1_agree: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def mean_abs_diff(self) -> float:
        return float(self.diffs.mean()) if self.diffs.size else 0.0

    @property
    def passed(self) -> bool:
        return not self.problems and self.positions > 0 and self.mean_abs_diff <= self.threshold

    def summary(self) -> str:
        if not self.positions:
            return "FAIL: no trained positions with teacher top-k found"
        verdict = "PASS" if self.passed else "FAIL"
        d = self.diffs
        return (
            f"{verdict}: {self.positions} trained positions, {d.size} teacher top-k entries; |written - recomputed| "
            f"logprob: mean {self.mean_abs_diff:.4f} nats (threshold {self.threshold:g}), max {d.max():.4f}; "
            f"top-1 agrees at {self.top1_agree}/{self.positions} positions"
        )


def check_distill(
    path: str | Path, model_path: str | Path, *, threshold: float = DEFAULT_THRESHOLD, threads: int | None = None
) -> DistillReport:
    """Recomputes the teacher's top-k at every trained position of ``path`` with the GGUF teacher."""
    from hermes_env.distill import TeacherContext, check_distill_arrays
    from hermes_env.env.turn_credit import turn_spans

    path = Path(path)
    jobs: list[tuple[str, list[int], list[int], list[int], list[list[int]], list[list[float]]]] = []
    problems: list[str] = []
    for line, group in _groups(path):
        ids_rows, lp_rows = group.get("distill_token_ids"), group.get("distill_logprobs")
        if ids_rows is None or lp_rows is None:
            raise ValueError(f"{path}:{line} has no distill_token_ids / distill_logprobs; write it with a teacher")
        masks = group.get("masks") or []
        problems += [f"line {line}: {p}" for p in check_distill_arrays(group["tokens"], masks, ids_rows, lp_rows)]
        infos = group.get("rollout_info") or [{}] * len(group["tokens"])
        for i, tokens in enumerate(group["tokens"]):
            where = f"line {line} sequence {i}"
            written = (infos[i] or {}).get("distill") or {}
            contexts = [TeacherContext.from_json(c) for c in written.get("contexts") or []]
            if not written.get("contexts"):  # no record: every run in the sequence's own context
                contexts = [TeacherContext(s, e) for s, e in turn_spans(masks[i])]
            if sorted((c.start, c.end) for c in contexts) != turn_spans(masks[i]):
                problems.append(f"{where}: the written contexts do not cover exactly the trained runs")
                continue
            own = [p for c in contexts if c.prefix_ids is None for p in range(c.start, c.end)]
            if own:  # the runs in the sequence's own context: one pass over the sequence, as the teacher did
                jobs.append((where, list(tokens[: max(own) + 1]), own, own, ids_rows[i], lp_rows[i]))
            for c in contexts:
                if c.prefix_ids is not None:
                    ids, offset = [*c.prefix_ids, *tokens[c.start : c.end]], len(c.prefix_ids) - c.start
                    targets = list(range(c.start, c.end))
                    jobs.append((where, ids, [p + offset for p in targets], targets, ids_rows[i], lp_rows[i]))
    if not jobs:
        raise ValueError(f"{path} holds no trained runs with teacher top-k")
    scorer = _Scorer(Path(model_path), n_ctx=max(len(j[1]) for j in jobs), threads=threads, batch=512)
    diffs: list[float] = []
    report = DistillReport(threshold, np.empty(0), problems=problems)
    try:
        for where, ids, asked, targets, ids_row, lp_row in jobs:
            if asked and asked[0] < 1:
                report.problems.append(f"{where}: position 0 is trained; nothing can predict it")
                continue
            rows = scorer.rows(ids, asked)
            for p, q in zip(asked, targets, strict=True):
                row = rows[p]
                written_ids, written_lps = ids_row[q], lp_row[q]
                report.positions += 1
                report.top1_agree += int(written_ids[0] == int(np.argmax(row)))
                diffs.extend(abs(lp - float(row[t])) for t, lp in zip(written_ids, written_lps, strict=True))
    finally:
        scorer.close()
    report.diffs = np.asarray(diffs, dtype=np.float64)
    return report


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m hermes_env.checks.recompute", description=__doc__.split("\n")[0], epilog=__doc__
    )
    parser.add_argument("groups", type=Path, help="jsonl of ScoredDataGroups (e.g. data/terminal_tasks_demo.jsonl)")
    parser.add_argument("--model", default="smollm2", help="the GGUF that sampled the data (default: smollm2)")
    parser.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD, help="largest mean |diff| that passes")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads for llama.cpp")
    parser.add_argument("--verbose", "-v", action="store_true", help="one line per sequence")
    parser.add_argument(
        "--distill",
        action="store_true",
        help="check the teacher's top-k (distill_token_ids / distill_logprobs) instead; --model is the teacher",
    )
    args = parser.parse_args(argv)
    from hermes_env.gguf import resolve_gguf

    if args.distill:
        try:
            model = resolve_gguf(args.model)
            distill = check_distill(args.groups, model, threshold=args.threshold, threads=args.threads)
        except (OSError, ValueError, ModuleNotFoundError) as err:
            print(f"error: {err}", file=sys.stderr)
            raise SystemExit(2) from None
        for problem in distill.problems:
            print(f"problem: {problem}")
        print(distill.summary())
        raise SystemExit(0 if distill.passed else 1)

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
