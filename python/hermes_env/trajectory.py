"""Token-exact trajectories: the arrays a trainer consumes from one rollout.

``Trajectory`` (Rust, ``hermes_env._core``) keeps ``tokens``, ``masks`` (token id where the
model generated the token, ``-100`` elsewhere) and ``logprobs`` (sampler logprob where
generated, ``1.0`` elsewhere) in step. Input that no sampler could have produced raises
``TrajectoryError`` (a ``HermesEnvError`` and ``ValueError`` naming the argument and value,
``.index`` the position) before anything changes: a negative or out-of-vocabulary id, a
logprob that is NaN, infinite or above 0, a ``finish_reason`` outside ``FINISH_REASONS``, an
empty completion, a completion on an empty trajectory, ``vocab_size`` below 1::

    t = Trajectory(vocab_size=len(tokenizer))
    t.add_prompt(prompt_ids)
    t.add_completion(out_ids, out_logprobs, finish_reason="stop")
    t.extend(next_prompt_ids, policy="raise")   # multi-turn: decided on token ids
    t.to_scored_item(score)                     # dict for an atroposlib ScoredDataItem

Extension policies, when the next prompt does not start with the trajectory's tokens (a chat
template that drops earlier ``<think>`` blocks, re-serialised tool-call JSON, a re-tokenised
boundary):

- ``"raise"``: ``TrajectoryDivergence`` (a ``TrajectoryError``) with ``.index`` and ``.window``;
  nothing changes.
- ``"warn_and_restart"``: a ``TrajectoryDivergenceWarning``; the trajectory restarts from the
  next prompt, entirely masked. The returned dict's ``previous`` holds the old trajectory so
  its generated tokens can still be trained as a separate sequence.
- ``"keep_raw"``: the trajectory keeps its own tokens — exactly what the model saw and
  produced — and appends ``new_turn``: the tokens of the messages added since the last
  completion, rendered on their own by the caller. The divergent re-rendering of earlier turns
  is discarded, so the model's next prompt is its own raw history plus the new messages.

Phase 1 (no token ids from the server): ``render_with_assistant_spans`` renders a conversation
once and finds the assistant turns' character spans; ``assistant_token_mask`` turns the
tokenizer's offsets and those spans into a mask in one pass.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, NamedTuple

from hermes_env._core import (
    FINISH_REASONS,
    MASK,
    PROMPT_LOGPROB,
    Trajectory,
    TrajectoryDivergenceWarning,
)
from hermes_env._core import assistant_token_mask as _assistant_token_mask
from hermes_env._renamed import old_names

__all__ = [
    "FINISH_REASONS",
    "MASK",
    "PROMPT_LOGPROB",
    "DivergencePolicy",
    "RenderedConversation",
    "Trajectory",
    "TrajectoryDivergenceWarning",
    "assistant_token_mask",
    "render_chat",
    "render_with_assistant_spans",
]

DivergencePolicy = Literal["raise", "warn_and_restart", "keep_raw"]

# The trajectory's errors live in hermes_env.errors (the Rust core raises those classes); the names this module
# exported before still work for a release (hermes_env._renamed.OLD_NAMES), with a warning once.
__getattr__ = old_names(__name__)

_PROBE_USER = "hermes-env-probe-user"
_PROBE_ASSISTANT = "hermes-env-probe-7f3a9c-assistant"


def assistant_token_mask(
    offsets: Sequence[tuple[int, int]],
    spans: Sequence[tuple[int, int]],
    ids: Sequence[int],
    vocab_size: int | None = None,
) -> list[int]:
    """The Phase-1 mask: ``ids[i]`` where token ``i`` overlaps an assistant span, ``-100`` elsewhere.

    ``offsets`` are per-token ``(start, end)`` character offsets (a fast tokenizer's
    ``offset_mapping``), ``spans`` the assistant turns' ``(start, end)`` ranges, sorted and
    disjoint. A token straddling a span boundary is trained (the model had to emit it to
    produce the span's characters); a zero-width token is trained when it sits inside a span.
    ``ids`` must be token ids (non-negative; below ``vocab_size`` when given), so every mask
    value is a token id or ``-100``. One O(tokens + spans) pass in Rust; bad input raises
    ``TrajectoryError`` (a ``ValueError``) naming the index.
    """
    return _assistant_token_mask(offsets, spans, ids, vocab_size)


class RenderedConversation(NamedTuple):
    """One rendering of a conversation: token ids, their character offsets, assistant spans."""

    ids: list[int]
    offsets: list[tuple[int, int]]
    spans: list[tuple[int, int]]


class _TurnMarkers(NamedTuple):
    header: str  # text the template puts before an assistant turn's content
    end: str  # text that closes an assistant turn and that the model generates (its EOS)


def render_chat(
    tokenizer: Any, messages: Sequence[Mapping[str, Any]], add_generation_prompt: bool, **kwargs: Any
) -> str:
    """``tokenizer.apply_chat_template(messages, tokenize=False, ...)``, checked to be text."""
    text = tokenizer.apply_chat_template(
        [dict(m) for m in messages], tokenize=False, add_generation_prompt=add_generation_prompt, **kwargs
    )
    if not isinstance(text, str):
        raise TypeError(f"tokenizer.apply_chat_template(tokenize=False) returned {type(text).__name__}, not str")
    return text


def _turn_markers(tokenizer: Any, template_kwargs: Mapping[str, Any]) -> _TurnMarkers:
    """Learns the assistant header and end-of-turn text from two tiny probe renderings.

    The probes cost the same whatever the conversation's length, so the real conversation is
    still rendered exactly once.
    """
    user = [{"role": "user", "content": _PROBE_USER}]
    without = render_chat(tokenizer, user, False, **template_kwargs)
    with_prompt = render_chat(tokenizer, user, True, **template_kwargs)
    if not with_prompt.startswith(without) or len(with_prompt) == len(without):
        raise ValueError(
            "cannot find the assistant header: the chat template's generation prompt does not extend "
            "the rendered conversation; build spans yourself and call assistant_token_mask"
        )
    header = with_prompt[len(without) :]
    full = render_chat(tokenizer, [*user, {"role": "assistant", "content": _PROBE_ASSISTANT}], False, **template_kwargs)
    at = full.rfind(_PROBE_ASSISTANT)
    if at < 0:
        raise ValueError("the chat template drops assistant content; cannot locate assistant turns")
    after = full[at + len(_PROBE_ASSISTANT) :]
    eos = getattr(tokenizer, "eos_token", None)
    if isinstance(eos, str) and eos and after.startswith(eos):
        end = eos
    else:
        end = after.rstrip()
    # Qwen3-style templates add an empty think block right after the header of the last turn;
    # it is template text inside the span, like tokenize_for_trainer's masking treats it.
    if header.find("<think>") > 0:
        header = header[: header.index("<think>")]
    return _TurnMarkers(header=header, end=end)


def render_with_assistant_spans(
    tokenizer: Any,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None = None,
    **template_kwargs: Any,
) -> RenderedConversation:
    """Renders ``messages`` once with the chat template and finds each assistant turn's span.

    A span runs from the end of the assistant header to the end of the turn's end-of-turn
    token (``<|im_end|>`` for Qwen), which the model generated and which is trained. Needs a
    fast tokenizer (``return_offsets_mapping``). Raises ``ValueError`` when the rendered text
    does not contain exactly one assistant header per assistant message (for example when a
    message's content contains the header text itself).
    """
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError(
            "render_with_assistant_spans needs a fast tokenizer (offset mapping); load it with use_fast=True"
        )
    kwargs = dict(template_kwargs)
    if tools:
        kwargs["tools"] = list(tools)
    markers = _turn_markers(tokenizer, kwargs)
    msgs = [dict(m) for m in messages]
    text = render_chat(tokenizer, msgs, False, **kwargs)
    n_assistant = sum(1 for m in msgs if m.get("role") == "assistant")
    found = text.count(markers.header)
    if found != n_assistant:
        raise ValueError(
            f"the rendered conversation contains the assistant header {markers.header!r} {found} times but there are "
            f"{n_assistant} assistant messages; a message's text contains the header, so spans are ambiguous"
        )
    spans: list[tuple[int, int]] = []
    cursor = 0
    for turn in range(n_assistant):
        start = text.index(markers.header, cursor) + len(markers.header)
        close = text.find(markers.end, start) if markers.end else -1
        if close < 0:
            raise ValueError(f"assistant turn {turn} (text offset {start}) has no end marker {markers.end!r}")
        end = close + len(markers.end)
        spans.append((start, end))
        cursor = end
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    ids = list(enc["input_ids"])
    offsets = list(enc["offset_mapping"])  # (start, end) tuples of ints already
    return RenderedConversation(ids=ids, offsets=offsets, spans=spans)
