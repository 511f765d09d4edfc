"""Chat-template rendering for the managed server: earlier assistant turns replayed raw.

The managed server never asks the template to re-serialise what the model produced: an
assistant message it generated is rendered from the exact raw text the model emitted
(reasoning and tool-call markup included), so the rendered prompt re-tokenises to the tokens
the model already has whenever the template leaves that text alone. When it does not (Qwen3
drops ``<think>`` blocks of turns before the last user message), the trajectory's divergence
policy decides; ``new_turn_ids`` gives ``keep_raw`` the tokens of only the new messages.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hermes_env.trajectory import render_chat

# Stands in for the branch's last assistant turn when locating where new messages begin. It
# has no whitespace or markup, so templates (which may strip or split content) keep it whole.
SENTINEL = "hermesenvsplitmarker7f3a9c"


def render_text(
    tokenizer: Any,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None,
    template_kwargs: Mapping[str, Any],
) -> str:
    """The prompt text for ``messages`` with the generation prompt appended."""
    kwargs = dict(template_kwargs)
    if tools:
        kwargs["tools"] = list(tools)
    return render_chat(tokenizer, messages, True, **kwargs)


def encode(tokenizer: Any, text: str) -> list[int]:
    """Token ids of rendered template text; the template already wrote any BOS it wants."""
    return list(tokenizer.encode(text, add_special_tokens=False))


@dataclass(frozen=True, eq=False)
class EncodedPrefix:
    """A prefix of an earlier rendered prompt that ends right after a special token, and its ids."""

    text: str
    ids: np.ndarray  # int64, read-only


def encode_incremental(
    tokenizer: Any, text: str, cache: EncodedPrefix | None, special_ids: Collection[int]
) -> tuple[np.ndarray, EncodedPrefix | None]:
    """``encode(tokenizer, text)`` as an int64 array, re-using an earlier prompt's prefix when ``text`` starts with it.

    Tokenizers split special tokens out of the text before anything else, so nothing merges
    across one: the ids of ``text`` are the cached prefix's ids followed by the ids of the rest.
    Each turn then tokenizes only what is new instead of the whole conversation, and the ids
    stay in one numpy buffer that ``Trajectory`` reads without converting. Returns the ids and
    the cache for the next turn (cut after the last special token of ``text``).
    """
    if cache is not None and text.startswith(cache.text):
        head, base = cache.ids, len(cache.text)
    else:
        head, base, cache = np.empty(0, dtype=np.int64), 0, None
    enc = tokenizer(text[base:], add_special_tokens=False, return_offsets_mapping=True)
    tail = list(enc["input_ids"])
    ids = np.concatenate([head, np.asarray(tail, dtype=np.int64)])
    ids.flags.writeable = False
    for j in range(len(tail) - 1, -1, -1):
        if tail[j] in special_ids:
            cut = base + int(enc["offset_mapping"][j][1])
            return ids, EncodedPrefix(text[:cut], ids[: len(head) + j + 1])
    return ids, cache


def new_turn_ids(
    tokenizer: Any,
    messages: Sequence[Mapping[str, Any]],
    last_assistant: int,
    tools: Sequence[Mapping[str, Any]] | None,
    template_kwargs: Mapping[str, Any],
    produced_end: str | None,
) -> list[int]:
    """Tokens of everything after message ``last_assistant`` (plus the generation prompt).

    Renders once more with that assistant message's content replaced by :data:`SENTINEL` and
    tokenises the text after it. ``produced_end`` is the end-of-turn text the model itself
    generated (e.g. ``<|im_end|>``); it is already in the trajectory, so it is skipped here.
    """
    probe = [dict(m) for m in messages]
    probe[last_assistant] = {"role": "assistant", "content": SENTINEL}
    text = render_text(tokenizer, probe, tools, template_kwargs)
    at = text.rfind(SENTINEL)
    if at < 0:
        raise ValueError(
            "the chat template dropped an assistant message's content, so the new turn cannot be located; "
            "use divergence_policy='warn_and_restart'"
        )
    after = text[at + len(SENTINEL) :]
    if produced_end and after.startswith(produced_end):
        after = after[len(produced_end) :]
    return encode(tokenizer, after)
