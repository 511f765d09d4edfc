"""Teacher scoring for on-policy distillation: a teacher's top-k at every token the student was trained on.

A teacher is any server speaking vLLM's ``/generate`` (vLLM through atroposlib's API server,
SGLang, ``hermes_env.gguf.serve_gguf``). It is sent the token ids of a context followed by
the student's exact tokens of a turn, with ``prompt_logprobs: k`` and ``max_tokens: 1``; the
answer's ``prompt_logprobs[p]`` (``{"<token id>": logprob, ...}``, ``None`` at position 0)
is the teacher's distribution of token ``p`` given everything before it, of which the ``k``
most likely entries are kept, best first.

The arrays written (atroposlib 0.4's ``distill_token_ids`` / ``distill_logprobs``, shape
``[sequence][position][k]``) have one row per token of the sequence: at a trained position
(``masks != -100``) the teacher's top-k ids and logprobs; at every other position ``k`` copies
of :data:`FILLER_TOKEN_ID` / :data:`FILLER_LOGPROB` (token 0, logprob 0.0, as hermes-agent's
``agentic_opd_env`` wrote them), so the arrays are rectangular and a trainer reading them must
select positions with ``masks`` as it does for every other per-token field.

Each trained run (one assistant turn) is scored in a :class:`TeacherContext`: the student's own
tokens before it (``prefix_ids=None``, the same context, scored for all such turns in one
request over the whole sequence), or token ids the environment chose (e.g. the conversation
with a hindsight hint, :mod:`hermes_env.judges.hints`). The contexts are written beside the
arrays (``rollout_info[i]["distill"]["contexts"]``), so ``python -m hermes_env.checks.recompute
--distill`` can score every position again.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from hermes_env.errors import TeacherError
from hermes_env.trajectory import MASK

__all__ = [
    "FILLER_LOGPROB",
    "FILLER_TOKEN_ID",
    "DistillArrays",
    "TeacherClient",
    "TeacherContext",
    "check_distill_arrays",
    "filler_row",
    "generate_url",
    "top_k_entries",
]

FILLER_TOKEN_ID = 0
FILLER_LOGPROB = 0.0


def generate_url(base_url: str) -> str:
    """``http://host:port/generate`` from ``http://host:port`` or ``http://host:port/v1``."""
    return base_url.rstrip("/").removesuffix("/v1") + "/generate"


def filler_row(k: int) -> tuple[list[int], list[float]]:
    """What an untrained position carries: ``k`` entries of token 0 with logprob 0.0."""
    return [FILLER_TOKEN_ID] * k, [FILLER_LOGPROB] * k


def _logprob_value(value: Any) -> float:
    # vLLM versions write a bare float or a Logprob object ({"logprob": x, "rank": r, "decoded_token": ...}).
    if isinstance(value, Mapping):
        value = value.get("logprob")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TeacherError(f"a prompt logprob is {value!r}, not a number")
    return float(value)


def top_k_entries(entry: Any, k: int) -> tuple[list[int], list[float]]:
    """The ``k`` most likely ``(ids, logprobs)`` of one ``prompt_logprobs`` position, best first (ties: lower id)."""
    if isinstance(entry, list):  # [{"id": lp}, ...] as some servers write it
        merged: dict[str, Any] = {}
        for part in entry:
            if not isinstance(part, Mapping):
                raise TeacherError(f"a prompt_logprobs entry holds {part!r}, not an object")
            merged.update(part)
        entry = merged
    if not isinstance(entry, Mapping):
        raise TeacherError(f"a prompt_logprobs entry is {entry!r}, not an object of token id -> logprob")
    pairs = []
    for key, value in entry.items():
        try:
            token = int(key)
        except (TypeError, ValueError):
            raise TeacherError(f"a prompt_logprobs key is {key!r}, not a token id") from None
        lp = _logprob_value(value)
        if not math.isfinite(lp) or lp > 0:
            raise TeacherError(f"the teacher's logprob of token {token} is {lp!r}, not a finite number <= 0")
        pairs.append((token, lp))
    if len(pairs) < k:
        raise TeacherError(
            f"the teacher returned {len(pairs)} logprobs at a position, fewer than teacher_top_k={k}; does it honour "
            "prompt_logprobs (vLLM caps it with --max-logprobs)?"
        )
    pairs.sort(key=lambda p: (-p[1], p[0]))
    top = pairs[:k]
    return [t for t, _ in top], [lp for _, lp in top]


@dataclass(frozen=True)
class TeacherContext:
    """How the teacher scores one trained run ``[start, end)`` of a sequence.

    ``prefix_ids=None``: after the sequence's own tokens ``tokens[:start]``; otherwise after
    ``prefix_ids``, which replace them (``hint`` says why, for the reader).
    """

    start: int
    end: int
    prefix_ids: list[int] | None = None
    hint: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"span": [self.start, self.end], "prefix_ids": self.prefix_ids, "hint": self.hint}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TeacherContext:
        start, end = data["span"]
        prefix = data.get("prefix_ids")
        return cls(int(start), int(end), None if prefix is None else [int(t) for t in prefix], data.get("hint"))


@dataclass
class DistillArrays:
    """One sequence's ``distill_token_ids`` / ``distill_logprobs`` and what it cost to get them."""

    token_ids: list[list[int]]
    logprobs: list[list[float]]
    requests: int = 0
    tokens_sent: int = 0  # context + scored tokens the teacher read
    seconds: float = 0.0  # wall time of this sequence's requests (they overlap other work)
    contexts: list[TeacherContext] = field(default_factory=list)


class TeacherClient:
    """Scores token ids with a teacher's ``/generate`` ``prompt_logprobs``; at most ``max_concurrency`` at once."""

    def __init__(
        self,
        base_url: str,
        *,
        top_k: int,
        vocab_size: int | None = None,
        max_concurrency: int = 4,
        timeout: float = 600.0,
        model: str | None = None,
    ) -> None:
        if top_k < 1:
            raise ValueError(f"top_k must be at least 1, got {top_k}")
        self.url = generate_url(base_url)
        self.top_k = top_k
        self.vocab_size = vocab_size
        self.timeout = timeout
        self.model = model
        self._limit = asyncio.Semaphore(max_concurrency)
        self.requests = 0
        self.tokens_sent = 0

    async def prompt_top_k(self, ids: Sequence[int], positions: Sequence[int]) -> list[tuple[list[int], list[float]]]:
        """The teacher's top-k of ``ids[p]``'s position for each ``p`` in ``positions`` (all ``>= 1``)."""
        if any(p < 1 or p >= len(ids) for p in positions):
            raise ValueError(f"positions must lie in [1, {len(ids)}); got {min(positions)}..{max(positions)}")
        body: dict[str, Any] = {
            "prompt": {"prompt_token_ids": [int(t) for t in ids]},
            "prompt_logprobs": self.top_k,
            "max_tokens": 1,
            "temperature": 0.0,
            "n": 1,
        }
        if self.model:
            body["model"] = self.model
        async with self._limit:
            try:
                async with aiohttp.ClientSession() as session:
                    async with session.post(
                        self.url, json=body, timeout=aiohttp.ClientTimeout(total=self.timeout)
                    ) as resp:
                        text = await resp.text()
                        if resp.status != 200:
                            raise TeacherError(f"the teacher at {self.url} answered HTTP {resp.status}: {text[:300]}")
            except (aiohttp.ClientError, TimeoutError, OSError) as err:
                reason = f"{type(err).__name__}: {err}"
                raise TeacherError(f"the teacher at {self.url} could not be asked: {reason}") from None
        self.requests += 1
        self.tokens_sent += len(ids)
        try:
            answer = json.loads(text)
        except json.JSONDecodeError:
            raise TeacherError(
                f"the teacher at {self.url} answered with something that is not JSON: {text[:200]}"
            ) from None
        entries = answer.get("prompt_logprobs") if isinstance(answer, dict) else None
        if isinstance(entries, list) and entries and isinstance(entries[0], list) and len(entries) == 1:
            entries = entries[0]  # [sequence][position], one sequence
        if not isinstance(entries, list) or len(entries) != len(ids):
            got = "none" if not isinstance(entries, list) else f"{len(entries)} positions"
            raise TeacherError(
                f"the teacher at {self.url} returned prompt_logprobs for {got}, expected {len(ids)}; it must answer "
                "prompt_logprobs (a vLLM-compatible /generate)"
            )
        rows = []
        for p in positions:
            row_ids, row_lps = top_k_entries(entries[p], self.top_k)
            if self.vocab_size is not None and any(t < 0 or t >= self.vocab_size for t in row_ids):
                raise TeacherError(
                    f"the teacher returned token id {max(row_ids)} at position {p}, outside the student's vocabulary "
                    f"of {self.vocab_size}; the teacher must use the student's tokenizer"
                )
            rows.append((row_ids, row_lps))
        return rows

    async def score(self, tokens: Sequence[int], contexts: Sequence[TeacherContext]) -> DistillArrays:
        """``distill_*`` rows for ``tokens``: the teacher's top-k in each context's run, the filler elsewhere."""
        k = self.top_k
        n = len(tokens)
        ids_rows: list[list[int]] = [[FILLER_TOKEN_ID] * k for _ in range(n)]
        lp_rows: list[list[float]] = [[FILLER_LOGPROB] * k for _ in range(n)]
        started = time.monotonic()
        same = [c for c in contexts if c.prefix_ids is None]
        jobs = []
        if same:
            # One request scores every run kept in the student's own context.
            last = max(c.end for c in same)
            positions = [p for c in same for p in range(c.start, c.end)]
            jobs.append((list(tokens[:last]), positions, positions))
        for c in contexts:
            if c.prefix_ids is not None:
                ids = [*c.prefix_ids, *tokens[c.start : c.end]]
                offset = len(c.prefix_ids) - c.start
                jobs.append((ids, [p + offset for p in range(c.start, c.end)], list(range(c.start, c.end))))
        results = await asyncio.gather(*(self.prompt_top_k(ids, asked) for ids, asked, _ in jobs))
        for (_, _, targets), rows in zip(jobs, results, strict=True):
            for p, (row_ids, row_lps) in zip(targets, rows, strict=True):
                ids_rows[p], lp_rows[p] = row_ids, row_lps
        return DistillArrays(
            ids_rows,
            lp_rows,
            requests=len(jobs),
            tokens_sent=sum(len(ids) for ids, _, _ in jobs),
            seconds=time.monotonic() - started,
            contexts=list(contexts),
        )


def check_distill_arrays(
    tokens: Sequence[Sequence[int]],
    masks: Sequence[Sequence[int]],
    distill_token_ids: Any,
    distill_logprobs: Any,
) -> list[str]:
    """Problems with a group's distill arrays (empty: they line up): one row per token, ``k`` entries each,
    logprobs finite and ``<= 0`` at trained positions, the filler at untrained ones."""
    problems: list[str] = []
    if distill_token_ids is None and distill_logprobs is None:
        return problems
    if distill_token_ids is None or distill_logprobs is None:
        return ["only one of distill_token_ids / distill_logprobs is present"]
    if not len(distill_token_ids) == len(distill_logprobs) == len(tokens):
        return [
            f"distill arrays hold {len(distill_token_ids)}/{len(distill_logprobs)} sequences for {len(tokens)} token "
            "sequences"
        ]
    k: int | None = None
    for i, (seq, mask, ids, lps) in enumerate(zip(tokens, masks, distill_token_ids, distill_logprobs, strict=True)):
        if not len(ids) == len(lps) == len(seq):
            problems.append(f"sequence {i}: {len(ids)}/{len(lps)} distill rows for {len(seq)} tokens")
            continue
        for p, (row_ids, row_lps) in enumerate(zip(ids, lps, strict=True)):
            if k is None:
                k = len(row_ids)
            if len(row_ids) != k or len(row_lps) != k:
                problems.append(f"sequence {i} position {p}: {len(row_ids)}/{len(row_lps)} entries, expected {k}")
                break
            if mask[p] == MASK:
                if any(t != FILLER_TOKEN_ID for t in row_ids) or any(v != FILLER_LOGPROB for v in row_lps):
                    problems.append(f"sequence {i} position {p}: untrained, but not the filler (0 / 0.0)")
                    break
            elif any(not math.isfinite(v) or v > 0 for v in row_lps):
                problems.append(f"sequence {i} position {p}: a teacher logprob is not a number <= 0")
                break
    return problems
