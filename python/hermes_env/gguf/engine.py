"""The generation engine behind the GGUF server: continuous batching over llama.cpp sequences.

One thread owns the model. Requests wait in a FIFO queue and are admitted when their worst
case fits in the KV cache (prompt plus ``max_tokens`` per sample), so a burst of rollouts is
queued, never refused for lack of room. Every step decodes one batch holding the next token
of every running sample plus chunks of prompts being read in, like vLLM's scheduler.

- **Prefix cache.** A finished sample's sequence keeps its keys and values. A new prompt that
  starts with tokens some sequence holds (the same rollout's next turn; the shared system
  prompt of a group) re-uses them and reads in only the rest: an idle sequence is taken over,
  a running one shares its cells (``seq_cp``).
- **``n > 1``.** The prompt is read once; the other samples share its cells and draw their
  own first token from the same logits.
- **Logprobs.** Each sampled token carries ``log_softmax(logits)[token]`` at temperature 1,
  whatever temperature / top-p / top-k / min-p it was drawn with (see :mod:`hermes_env.gguf.sampling`).
- **Stopping** as vLLM does: an end-of-generation token (llama.cpp's set for the model) unless
  ``ignore_eos``, a ``stop_token_ids`` entry, a ``stop`` string in the detokenized output, or
  ``max_tokens`` / the model's context length (``finish_reason="length"``). Token ids always
  include the token that ended the sample.
"""

from __future__ import annotations

import collections
import concurrent.futures
import itertools
import logging
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hermes_env.errors import GenerationRequestError, LlamaDecodeError
from hermes_env.gguf.llama import LlamaCpp
from hermes_env.gguf.sampling import SamplingParams, log_softmax, sample_token

__all__ = ["Engine", "GenerationRequest", "GenerationResult", "SampleResult"]

logger = logging.getLogger(__name__)


@dataclass
class GenerationRequest:
    """What to generate; field names and defaults follow vLLM's ``SamplingParams``."""

    prompt: list[int]
    n: int = 1
    max_tokens: int | None = 16
    sampling: SamplingParams = field(default_factory=SamplingParams)
    stop: tuple[str, ...] = ()
    stop_token_ids: frozenset[int] = frozenset()
    ignore_eos: bool = False
    include_stop_str_in_output: bool = False
    seed: int | None = None
    logprobs: int | None = None  # alternatives besides the sampled token (0: the sampled token only)
    prompt_logprobs: int | None = None


@dataclass
class SampleResult:
    token_ids: list[int]
    logprobs: list[float]  # of each sampled token, temperature 1
    top_logprobs: list[dict[int, float]] | None  # per token: sampled token first, then the top alternatives
    finish_reason: str  # "stop" | "length"
    stop_reason: int | str | None  # the stop string or stop token id that ended it (None: EOS, length)
    text: str  # detokenized (special tokens skipped), cut at the stop string


@dataclass
class GenerationResult:
    prompt: list[int]
    samples: list[SampleResult]
    prompt_logprobs: list[dict[int, float] | None] | None


# -- KV bookkeeping ------------------------------------------------------------------------------
#
# In llama.cpp's unified cache a cell is freed when no sequence references it. Cells are
# modelled as runs: a sequence appends to its own run, and seq_cp of a prefix makes the target
# reference prefixes of the source's runs. Every reference to a run covers the run's first k
# cells, so the run's live size is the largest k referencing it.


@dataclass(eq=False)
class _Run:
    id: int
    owner: _Slot
    size: int = 0


@dataclass(eq=False)
class _Slot:
    seq: int
    tokens: list[int] = field(default_factory=list)  # ids whose keys/values sit at positions 0..len-1
    pieces: list[tuple[_Run, int]] = field(default_factory=list)  # (run, cells used from its start), in order
    busy: bool = False
    last_used: int = 0

    def truncate(self, length: int) -> None:
        del self.tokens[length:]
        self.pieces = _prefix_pieces(self.pieces, length)

    def share(self, source: _Slot, length: int) -> None:
        self.tokens = list(source.tokens[:length])
        self.pieces = _prefix_pieces(source.pieces, length)

    def append(self, token: int, runs: itertools.count[int]) -> None:
        self.tokens.append(token)
        if self.pieces:
            run, used = self.pieces[-1]
            if run.owner is self and used == run.size:
                run.size += 1
                self.pieces[-1] = (run, used + 1)
                return
        self.pieces.append((_Run(next(runs), self, 1), 1))


def _prefix_pieces(pieces: list[tuple[_Run, int]], length: int) -> list[tuple[_Run, int]]:
    out, total = [], 0
    for run, used in pieces:
        if total >= length:
            break
        take = min(used, length - total)
        out.append((run, take))
        total += take
    return out


def _cells_in_use(slots: Sequence[_Slot], plan: dict[int, int]) -> int:
    """Cells the cache holds if each slot in ``plan`` (by seq) is cut to the given length."""
    live: dict[int, int] = {}
    for slot in slots:
        pieces = _prefix_pieces(slot.pieces, plan[slot.seq]) if slot.seq in plan else slot.pieces
        for run, used in pieces:
            live[run.id] = max(live.get(run.id, 0), used)
    return sum(live.values())


# -- requests in flight --------------------------------------------------------------------------


@dataclass
class _Sample:
    index: int
    rng: np.random.Generator
    slot: _Slot | None = None
    ids: list[int] = field(default_factory=list)
    lps: list[float] = field(default_factory=list)
    tops: list[dict[int, float]] = field(default_factory=list)
    text: bytearray = field(default_factory=bytearray)
    pending: int | None = None  # sampled, not yet in the cache
    result: SampleResult | None = None


@dataclass
class _Active:
    request: GenerationRequest
    future: concurrent.futures.Future[GenerationResult]
    max_new: int
    samples: list[_Sample]
    prefill_slot: _Slot
    prefilled: int  # prompt tokens already in the cache
    prompt_lps: list[dict[int, float] | None] | None = None
    cancelled: bool = False

    @property
    def prefilling(self) -> bool:
        return self.prefilled < len(self.request.prompt)

    def reserved(self) -> int:
        """Cells this request may still add to the cache."""
        unread = len(self.request.prompt) - self.prefilled
        return unread + sum(self.max_new - len(s.ids) for s in self.samples if s.result is None)


class Engine:
    """Serves :class:`GenerationRequest`\\ s from a thread that owns ``model``; see the module docstring."""

    def __init__(self, model: LlamaCpp, *, max_model_len: int | None = None, seed: int | None = None) -> None:
        if model.n_seq > model.n_batch:
            raise ValueError(
                f"{model.n_seq} parallel sequences need a batch of at least as many tokens (got {model.n_batch}); "
                "raise --batch-size or lower --parallel"
            )
        self.model = model
        self.max_model_len = min(max_model_len or model.n_ctx_train or model.n_ctx, model.n_ctx)
        self.capacity = model.n_ctx
        self.vocab_size = model.n_vocab
        self.eog_ids = model.eog_ids
        self.token_bytes = [model.piece(t) for t in range(model.n_vocab)]
        self._seeds = np.random.SeedSequence(seed)
        self._slots = [_Slot(seq=i) for i in range(model.n_seq)]
        self._runs = itertools.count()
        self._clock = itertools.count(1)
        self._queue: collections.deque[_Active] = collections.deque()
        self._active: list[_Active] = []
        self._cond = threading.Condition()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self.stats = {"steps": 0, "generated_tokens": 0, "prompt_tokens_read": 0, "prompt_tokens_reused": 0}

    # -- public ------------------------------------------------------------------------------

    def start(self) -> Engine:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="gguf-engine", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the thread; requests still queued or running fail with ``RuntimeError``."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None

    def submit(self, request: GenerationRequest) -> concurrent.futures.Future[GenerationResult]:
        """Queue ``request``; raises :class:`GenerationRequestError` at once when it can never be served."""
        self._validate(request)
        future: concurrent.futures.Future[GenerationResult] = concurrent.futures.Future()
        max_new = self.max_model_len - len(request.prompt)
        if request.max_tokens is not None:
            max_new = min(max_new, request.max_tokens)
        if request.seed is not None:
            seeds = np.random.SeedSequence(request.seed).spawn(request.n)
        else:
            with self._cond:
                seeds = self._seeds.spawn(request.n)
        samples = [_Sample(index=i, rng=np.random.default_rng(s)) for i, s in enumerate(seeds)]
        active = _Active(request, future, max_new, samples, prefill_slot=self._slots[0], prefilled=0)
        with self._cond:
            if self._stopping:
                raise RuntimeError("the engine is shutting down")
            self._queue.append(active)
            self._cond.notify_all()
        future.add_done_callback(lambda f: self._cancel(active) if f.cancelled() else None)
        return future

    @property
    def running(self) -> bool:
        """Whether the engine thread is serving (false before start, after stop or a crash)."""
        return self._thread is not None and self._thread.is_alive() and not self._stopping

    def pending(self) -> int:
        """Requests waiting or running."""
        with self._cond:
            return len(self._queue) + len(self._active)

    # -- validation --------------------------------------------------------------------------

    def _validate(self, r: GenerationRequest) -> None:
        if not r.prompt:
            raise GenerationRequestError("the prompt is empty; send at least one token id")
        bad = next((t for t in r.prompt if not 0 <= t < self.vocab_size), None)
        if bad is not None:
            raise GenerationRequestError(f"prompt token id {bad} is outside the vocabulary (0..{self.vocab_size - 1})")
        if len(r.prompt) >= self.max_model_len:
            raise GenerationRequestError(
                f"this model's maximum context length is {self.max_model_len} tokens, but the prompt has "
                f"{len(r.prompt)}; shorten the conversation or start the server with larger --max-model-len "
                "and --ctx-size"
            )
        if not 1 <= r.n <= len(self._slots):
            raise GenerationRequestError(
                f"n must be between 1 and {len(self._slots)} (the server's --parallel), got {r.n}"
            )
        if r.max_tokens is not None and r.max_tokens < 1:
            raise GenerationRequestError(f"max_tokens must be at least 1, got {r.max_tokens}")
        need = len(r.prompt) + r.n * (
            min(r.max_tokens, self.max_model_len - len(r.prompt))
            if r.max_tokens is not None
            else self.max_model_len - len(r.prompt)
        )
        if need > self.capacity:
            raise GenerationRequestError(
                f"the request needs up to {need} KV cells (prompt + n x max_tokens) but the server has "
                f"{self.capacity}; lower n or max_tokens, or start the server with a larger --ctx-size"
            )
        p = r.sampling
        if p.temperature < 0 or not 0 < p.top_p <= 1 or not 0 <= p.min_p <= 1:
            raise GenerationRequestError(
                f"temperature must be >= 0, top_p in (0, 1], min_p in [0, 1]; got {p.temperature}, {p.top_p}, {p.min_p}"
            )
        for k, name in ((r.logprobs, "logprobs"), (r.prompt_logprobs, "prompt_logprobs")):
            if k is not None and not 0 <= k <= 20:
                raise GenerationRequestError(f"{name} must be between 0 and 20, got {k}")

    # -- engine thread -----------------------------------------------------------------------

    def _cancel(self, active: _Active) -> None:
        with self._cond:
            active.cancelled = True
            self._cond.notify_all()

    def _run(self) -> None:
        try:
            while True:
                with self._cond:
                    while not self._stopping and not self._queue and not self._active:
                        self._cond.wait()
                    if self._stopping:
                        break
                    self._drop_cancelled()
                    self._admit()
                if self._active:
                    self._step()
        except BaseException as err:  # noqa: BLE001 - a crash must fail every request, not hang them
            logger.exception("the generation engine crashed")
            self._fail_all(RuntimeError(f"the generation engine crashed: {err}"))
            return
        self._fail_all(RuntimeError("the server is shutting down"))

    def _fail_all(self, err: BaseException) -> None:
        with self._cond:
            waiting = list(self._queue) + list(self._active)
            self._queue.clear()
            self._active.clear()
            self._stopping = True
        for a in waiting:
            _settle(a.future, exception=err)
        for slot in self._slots:
            slot.busy = False

    def _drop_cancelled(self) -> None:
        for a in [a for a in self._queue if a.cancelled]:
            self._queue.remove(a)
        for a in [a for a in self._active if a.cancelled]:
            self._release(a)

    def _release(self, a: _Active) -> None:
        """Frees a request's sequences (they stay cached for prefix re-use) and forgets it."""
        for s in a.samples:
            if s.slot is not None:
                s.slot.busy = False
                s.slot.last_used = next(self._clock)
        a.prefill_slot.busy = False
        if a in self._active:
            self._active.remove(a)

    def _evict(self, slot: _Slot) -> None:
        self.model.seq_rm(slot.seq)
        slot.truncate(0)

    def _prefix_source(self, r: GenerationRequest) -> tuple[_Slot | None, int]:
        """The sequence holding the longest prefix of the prompt, and its length.

        At most ``len(prompt) - 1``: the last prompt token is read again for its logits. None when
        prompt logprobs are wanted (they need every position's logits). An idle sequence wins a tie.
        """
        best, reuse = None, 0
        if r.prompt_logprobs is not None:
            return None, 0
        for s in self._slots:
            k = _common_prefix(s.tokens, r.prompt, len(r.prompt) - 1)
            if k > reuse or (k == reuse and k > 0 and best is not None and best.busy and not s.busy):
                best, reuse = s, k
        return best, reuse

    def _admit(self) -> None:
        """Moves queued requests, in order, into the running set while their worst case fits in the cache."""
        while self._queue:
            a = self._queue[0]
            r = a.request
            idle = [s for s in self._slots if not s.busy]
            if len(idle) < r.n:
                return
            best, reuse = self._prefix_source(r)
            # Empty sequences first, then the least recently used.
            others = sorted((s for s in idle if s is not best), key=lambda s: (bool(s.tokens), s.last_used))
            chosen = ([best] if best is not None and not best.busy else []) + others
            chosen = chosen[: r.n]
            plan = {s.seq: (reuse if s is best else 0) for s in chosen}
            need = (len(r.prompt) - reuse) + r.n * a.max_new + sum(x.reserved() for x in self._active)
            spare = [s for s in others if s.seq not in plan and s.tokens]
            while _cells_in_use(self._slots, plan) + need > self.capacity and spare:
                plan[spare.pop(0).seq] = 0
            if _cells_in_use(self._slots, plan) + need > self.capacity:
                return  # wait for running requests to finish (validation ensured it fits an empty engine)
            self._queue.popleft()
            for slot in self._slots:
                if slot.seq in plan:
                    length = plan[slot.seq]
                    if length == 0:
                        self.model.seq_rm(slot.seq)
                    else:
                        self.model.seq_rm(slot.seq, length)
                    slot.truncate(length)
            first = chosen[0]
            if best is not None and best is not first:
                if best.busy:  # a running sequence holds the prefix: share its cells
                    self.model.seq_cp(best.seq, first.seq, 0, reuse)
                    first.share(best, reuse)
                else:
                    reuse = 0
            for slot in chosen:
                slot.busy = True
                slot.last_used = next(self._clock)
            a.prefill_slot = first
            a.prefilled = reuse
            for sample, slot in zip(a.samples, chosen, strict=True):
                sample.slot = slot
            if r.prompt_logprobs is not None:
                a.prompt_lps = [None]
            self.stats["prompt_tokens_reused"] += reuse
            self._active.append(a)

    def _step(self) -> None:
        """One llama_decode: the next token of every running sample, then prompt chunks."""
        with self._cond:
            active = [a for a in self._active if not a.cancelled]
        tokens: list[int] = []
        positions: list[int] = []
        seqs: list[int] = []
        outputs: list[int] = []
        owners: list[tuple[str, Any, Any]] = []  # per output row: ("gen", active, sample) | ("prompt", active, pos)
        for a in active:
            for s in a.samples:
                if s.pending is not None and s.slot is not None:
                    tokens.append(s.pending)
                    positions.append(len(s.slot.tokens))
                    seqs.append(s.slot.seq)
                    outputs.append(1)
                    owners.append(("gen", a, s))
        budget = self.model.n_batch - len(tokens)
        prefill_chunks: list[tuple[_Active, int, int]] = []
        for a in active:
            if budget <= 0:
                break
            if not a.prefilling:
                continue
            start = a.prefilled
            end = min(len(a.request.prompt), start + budget)
            want_all = a.request.prompt_logprobs is not None
            for pos in range(start, end):
                tokens.append(a.request.prompt[pos])
                positions.append(pos)
                seqs.append(a.prefill_slot.seq)
                last = pos == len(a.request.prompt) - 1
                outputs.append(1 if (want_all or last) else 0)
                if want_all or last:
                    owners.append(("prompt", a, pos))
            prefill_chunks.append((a, start, end))
            budget -= end - start
        if not tokens:
            return
        try:
            rows = self.model.decode(
                np.asarray(tokens, dtype=np.int32),
                np.asarray(positions, dtype=np.int32),
                np.asarray(seqs, dtype=np.int32),
                np.asarray(outputs, dtype=np.int8),
            )
        except LlamaDecodeError as err:
            self._decode_failed(err, active)
            return
        self.stats["steps"] += 1
        # The fed tokens are now in the cache.
        for kind, _a, s in owners:
            if kind == "gen":
                s.slot.append(s.pending, self._runs)
                s.pending = None
        for a, start, end in prefill_chunks:
            for pos in range(start, end):
                a.prefill_slot.append(a.request.prompt[pos], self._runs)
            a.prefilled = end
            self.stats["prompt_tokens_read"] += end - start
        for row, (kind, a, what) in zip(rows, owners, strict=True):
            if a.cancelled:
                continue
            if kind == "gen":
                self._take(a, what, row)
            else:
                pos = int(what)
                if a.prompt_lps is not None and pos + 1 < len(a.request.prompt):
                    a.prompt_lps.append(_top(log_softmax(row), a.request.prompt[pos + 1], a.request.prompt_logprobs))
                if pos == len(a.request.prompt) - 1:
                    self._start_samples(a, row)
        with self._cond:
            for a in active:
                if all(s.result is not None for s in a.samples):
                    self._finish(a)

    def _decode_failed(self, err: LlamaDecodeError, active: list[_Active]) -> None:
        with self._cond:
            idle = sorted((s for s in self._slots if not s.busy and s.tokens), key=lambda s: s.last_used)
            if err.code == 1 and idle:
                self._evict(idle[0])  # fragmentation: free a cached sequence and try again
                return
        logger.error("llama_decode failed (%s); failing the newest request", err)
        self._fail(active[-1], RuntimeError(f"generation failed: {err}; retry the request"))

    def _fail(self, a: _Active, err: Exception) -> None:
        """Ends one request with ``err``; its sequences' caches are dropped, the others run on."""
        with self._cond:
            a.cancelled = True
            for s in a.samples:
                if s.slot is not None:
                    self._evict(s.slot)
            self._evict(a.prefill_slot)
            self._release(a)
        _settle(a.future, exception=err)

    def _start_samples(self, a: _Active, row: np.ndarray) -> None:
        """The prompt is in the cache: the other samples share it, and every sample draws its first token."""
        base = a.prefill_slot
        for s in a.samples:
            if s.slot is not base and s.slot is not None:
                self.model.seq_cp(base.seq, s.slot.seq, 0, len(a.request.prompt))
                s.slot.share(base, len(a.request.prompt))
        for s in a.samples:
            if not a.cancelled:
                self._take(a, s, row)

    def _take(self, a: _Active, s: _Sample, row: np.ndarray) -> None:
        """Draws the sample's next token from ``row`` and decides whether the sample is done."""
        r = a.request
        token, lp = sample_token(row, r.sampling, s.rng)
        if not math.isfinite(lp):
            self._fail(a, RuntimeError("the model produced logits that are not finite numbers; check the GGUF file"))
            return
        s.ids.append(token)
        s.lps.append(lp)
        if r.logprobs is not None:
            s.tops.append(_top(log_softmax(row), token, r.logprobs))
        self.stats["generated_tokens"] += 1
        finish: tuple[str, int | str | None, int | None] | None = None
        piece = self.token_bytes[token]
        before = len(s.text)
        s.text += piece
        if token in r.stop_token_ids:
            finish = ("stop", token, None)
        elif token in self.eog_ids and not r.ignore_eos:
            finish = ("stop", None, None)
        elif r.stop and piece:
            hit = _find_stop(s.text, r.stop, before)
            if hit is not None:
                at, stop = hit
                finish = ("stop", stop, at + (len(stop.encode()) if r.include_stop_str_in_output else 0))
        if finish is None and (len(s.ids) >= a.max_new or len(r.prompt) + len(s.ids) >= self.max_model_len):
            finish = ("length", None, None)
        if finish is None:
            s.pending = token
            return
        reason, stop_reason, cut = finish
        text = bytes(s.text if cut is None else s.text[:cut]).decode("utf-8", errors="replace")
        s.result = SampleResult(
            token_ids=list(s.ids),
            logprobs=list(s.lps),
            top_logprobs=list(s.tops) if r.logprobs is not None else None,
            finish_reason=reason,
            stop_reason=stop_reason,
            text=text,
        )
        if s.slot is not None:
            s.slot.busy = False
            s.slot.last_used = next(self._clock)

    def _finish(self, a: _Active) -> None:
        self._release(a)
        result = GenerationResult(
            prompt=list(a.request.prompt),
            samples=[s.result for s in a.samples if s.result is not None],
            prompt_logprobs=a.prompt_lps,
        )
        _settle(a.future, result=result)


def _settle(
    future: concurrent.futures.Future[GenerationResult],
    *,
    result: GenerationResult | None = None,
    exception: BaseException | None = None,
) -> None:
    """Completes ``future`` unless the caller cancelled it meanwhile (then there is nobody to tell)."""
    try:
        if exception is not None:
            future.set_exception(exception)
        else:
            future.set_result(result)  # type: ignore[arg-type]
    except concurrent.futures.InvalidStateError:
        pass


def _common_prefix(a: Sequence[int], b: Sequence[int], limit: int) -> int:
    n = min(len(a), len(b), limit)
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _top(logprobs: np.ndarray, token: int, k: int | None) -> dict[int, float]:
    """``{token: lp}`` followed by the ``k`` most likely other tokens (vLLM puts the sampled token first)."""
    out = {int(token): float(logprobs[token])}
    if k:
        # The k largest, ties to the lower id (as a stable sort of the whole row), without sorting the whole
        # vocabulary: a teacher asks this at every position of a sequence.
        k = min(k, logprobs.shape[0])
        threshold = np.partition(logprobs, logprobs.shape[0] - k)[logprobs.shape[0] - k]
        candidates = np.flatnonzero(logprobs >= threshold)
        order = candidates[np.lexsort((candidates, -logprobs[candidates]))][:k]
        for t in order:
            out.setdefault(int(t), float(logprobs[t]))
    return out


def _find_stop(text: bytearray, stops: Sequence[str], new_from: int) -> tuple[int, str] | None:
    """The earliest stop string that ends in the bytes from ``new_from`` on: (byte offset, string)."""
    best: tuple[int, str] | None = None
    for stop in stops:
        raw = stop.encode()
        at = text.find(raw, max(0, new_from - len(raw) + 1))
        if at >= 0 and (best is None or at < best[0]):
            best = (at, stop)
    return best
