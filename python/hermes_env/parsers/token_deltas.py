"""Split a model output into the text deltas a serving engine would stream.

Used by the CLI demo (``--tokenizer qwen3``) and the benchmarks: a fixed number of characters per
chunk, or one token per delta with the real Qwen3 tokenizer, detokenised incrementally the way
vLLM's fast-tokenizer detokenizer does (``tokenizers.decoders.DecodeStream``: a token that
completes no character is merged into the next delta).
"""

from __future__ import annotations

import functools
from typing import Any

from hermes_env._core import list_parsers, parser_info
from hermes_env.resources import bundled_tokenizer_dir


def _marker_tokens() -> list[str]:
    tokens: dict[str, None] = {}
    for name in list_parsers():
        tokens.update(dict.fromkeys(parser_info(name).special_tokens))
    return list(tokens)


#: Every registered format's markup that its model family's tokenizer has as single special
#: tokens (``parser_info(name).special_tokens``); added to the Qwen3 tokenizer so markers are one
#: token each, as in the real vocabularies.
MARKER_TOKENS: list[str] = _marker_tokens()


def char_chunks(text: str, size: int) -> list[str]:
    """``text`` cut every ``size`` characters (``size >= 1``)."""
    if size < 1:
        raise ValueError(f"chunk size must be at least 1, got {size}")
    return [text[i : i + size] for i in range(0, len(text), size)]


@functools.lru_cache(maxsize=1)
def qwen3_tokenizer() -> Any:
    """The real Qwen3 tokenizer with :data:`MARKER_TOKENS` added as special tokens."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(bundled_tokenizer_dir("qwen3")))
    tok.add_tokens(MARKER_TOKENS, special_tokens=True)
    return tok


def qwen3_deltas(text: str) -> list[str]:
    """One delta per Qwen3 token (incremental detokenisation). ``"".join`` gives the text back
    unless the tokenizer normalises it."""
    from tokenizers.decoders import DecodeStream

    tok = qwen3_tokenizer()
    ids = tok(text, add_special_tokens=False, verbose=False)["input_ids"]
    stream = DecodeStream(skip_special_tokens=False)
    backend = tok.backend_tokenizer
    deltas = []
    for tid in ids:
        piece = stream.step(backend, tid)
        if piece:
            deltas.append(piece)
    return deltas
