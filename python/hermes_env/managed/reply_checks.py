"""One ``/generate`` call, checked before anything is recorded.

Every way the call can fail becomes a :class:`~hermes_env.errors.PolicyCallError` whose
``kind`` the environment reports when it drops the rollout's group:

- ``policy_http_error``: an HTTP error status (after atroposlib's retries);
- ``policy_timeout``: no answer within the server's request timeout;
- ``policy_connection_error``: no connection, or the connection dropped;
- ``policy_bad_response``: an answer that is not a usable completion — a body that is not JSON,
  missing ``logprobs``, an empty logprob entry (atroposlib's parsing of those raises), a prompt
  the server rewrote, a sample with no tokens, a token id that is negative or outside the
  vocabulary, a logprob that is NaN, infinite or above 0, an unknown finish reason, an
  aborted request.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hermes_env.errors import PolicyCallError, classify_policy_error, describe_error, unwrap_retries
from hermes_env.trajectory import FINISH_REASONS

# What atroposlib's parsing of a malformed reply raises (results["logprobs"], item[0], ...).
_REPLY_SHAPE_ERRORS = (KeyError, IndexError, TypeError, ValueError, AttributeError)


@dataclass(frozen=True)
class GenerateReply:
    """A checked reply: one entry per sample, ids/logprobs as plain Python lists."""

    outputs: list[list[int]]
    logprobs: list[list[float]]
    finish_reasons: list[str]


async def generate(server: Any, sent: list[int], n: int, params: Mapping[str, Any], vocab_size: int) -> GenerateReply:
    """``server.tokens_and_logprobs_completion(input_ids=sent, n=n, **params)``, checked."""
    try:
        reply = await server.tokens_and_logprobs_completion(input_ids=sent, n=n, **params)
    except Exception as err:  # noqa: BLE001 - classified, re-raised as PolicyCallError
        inner = unwrap_retries(err)
        kind = classify_policy_error(inner)
        if kind == "policy_error" and isinstance(inner, _REPLY_SHAPE_ERRORS):
            kind = "policy_bad_response"
        raise PolicyCallError(kind, f"/generate failed: {describe_error(err)}") from err
    return check_reply(sent, reply, vocab_size)


def _bad(message: str) -> PolicyCallError:
    return PolicyCallError("policy_bad_response", message)


def finish_reason(raw: Any) -> str:
    """A sample's finish reason as a string (vLLM may report ``{"type": "stop", ...}``; none means stop)."""
    if isinstance(raw, Mapping):
        raw = raw.get("type", "stop")
    return str(raw) if raw else "stop"


def check_reply(sent: Sequence[int], reply: Any, vocab_size: int) -> GenerateReply:
    """Refuses a reply that does not line up or that no sampler could have produced."""
    if not isinstance(reply, tuple | list) or len(reply) != 4:
        raise _bad("the server's reply is not (prompt_tokens, outputs, logprobs, finish_reasons)")
    prompt_tokens, outputs, logprobs, finishes = reply
    # The prompt echoed back is normally the very list sent (atroposlib's servers return it): O(1).
    if prompt_tokens is not None and prompt_tokens is not sent and list(prompt_tokens) != list(sent):
        raise _bad(
            "the server reports a different prompt than was sent (it rewrote the token ids, e.g. dropped a "
            "duplicate BOS); the trajectory would not match what the model saw"
        )
    if not outputs:
        raise _bad("the server returned no completions")
    if logprobs is None or len(outputs) != len(logprobs):
        got = "no logprobs" if logprobs is None else f"{len(logprobs)} logprob lists"
        raise _bad(f"the server returned {len(outputs)} completions but {got}")
    finishes = list(finishes or [])
    checked_ids, checked_lps, checked_finish = [], [], []
    for i, (ids, lps) in enumerate(zip(outputs, logprobs, strict=True)):
        if not ids:
            raise _bad(f"completion {i} has no tokens; a sampler returns at least one")
        if len(ids) != len(lps):
            raise _bad(f"completion {i}: {len(ids)} token ids but {len(lps)} logprobs from the server")
        plain = _plain_sample(ids, lps, vocab_size)
        if plain is not None:
            out_ids, out_lps = plain
        else:
            out_ids, out_lps = _checked_sample(i, ids, lps, vocab_size)
        finish = finish_reason(finishes[i] if i < len(finishes) else None)
        if finish == "abort":
            raise _bad(f"completion {i}: the server aborted the request (finish_reason 'abort')")
        if finish not in FINISH_REASONS:
            raise _bad(f"completion {i}: unknown finish_reason {finish!r}")
        checked_ids.append(out_ids)
        checked_lps.append(out_lps)
        checked_finish.append(finish)
    return GenerateReply(outputs=checked_ids, logprobs=checked_lps, finish_reasons=checked_finish)


def _plain_sample(ids: Sequence[Any], lps: Sequence[Any], vocab_size: int) -> tuple[list[int], list[float]] | None:
    """The sample as lists when it is what servers send (Python ints in range, finite float logprobs <= 0),
    checked with builtins that loop in C; ``None`` sends it to the per-token check and its error message."""
    if set(map(type, ids)) != {int} or min(ids) < 0 or max(ids) >= vocab_size:
        return None
    if set(map(type, lps)) != {float} or not all(map(math.isfinite, lps)) or max(lps) > 0:
        return None
    return list(ids), list(lps)


def _checked_sample(i: int, ids: Sequence[Any], lps: Sequence[Any], vocab_size: int) -> tuple[list[int], list[float]]:
    """Each token id and logprob checked in turn (numpy values, ints for logprobs); the first bad one raises."""
    out_ids = []
    for j, t in enumerate(ids):
        if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < vocab_size:
            raise _bad(
                f"completion {i}: token id {t!r} at position {j} is not an id of the tokenizer "
                f"(vocabulary size {vocab_size}); check that the server and the environment use the same tokenizer"
            )
        out_ids.append(int(t))
    out_lps = []
    for j, lp in enumerate(lps):
        value = float(lp) if isinstance(lp, int | float) and not isinstance(lp, bool) else math.nan
        if not math.isfinite(value) or value > 0:
            raise _bad(f"completion {i}: logprob {lp!r} at position {j} is not a finite number <= 0")
        out_lps.append(value)
    return out_ids, out_lps
