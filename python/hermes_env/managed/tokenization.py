"""Token ids of rendered template text for the managed server: the reference and the fast paths.

:func:`encode` (``tokenizer.encode(text, add_special_tokens=False)``) is the reference every
prompt must equal. A turn encodes only its new text (a few hundred tokens), and through
``transformers`` and ``tokenizers`` that costs about 1 µs a token, most of it in the regex
pre-tokenizer (Oniguruma) and the offset bookkeeping of each byte — the largest part of a turn
once rendering is incremental. :class:`Tokenization` picks, once per tokenizer, the fastest
encoder that gives the reference's ids:

1. ``hermes_env._core.ByteLevelBpe``, built from the tokenizer's own ``tokenizer.json``, for the
   byte-level BPE models it reproduces (Qwen, DeepSeek, Llama 3, GPT-2 style; others are refused
   when it is built). Its regex engine's Unicode tables may not be the reference's, so it trusts
   only ASCII as is: each other character is checked once, on first sight, by encoding it in
   contexts with both (:data:`CONTEXTS`) and comparing ids, pre-tokenizer pieces and the
   normalizer's output; a character that differs anywhere is refused, and a text holding one (or
   a segment NFC would change) is encoded by the reference;
2. the Rust backend's ``encode_batch_fast`` (no offsets);
3. :func:`encode` itself.

Each candidate must also give the reference's ids on a probe text with every boundary token in
it before it is used. Tokenizers that are not Hugging Face fast tokenizers (no
``backend_tokenizer``) always use :func:`encode`.

:class:`Tokenization` also knows the tokenizer's boundary tokens (special and added tokens):
tokenizers split them out of the text first, so nothing merges across one, and a branch can
re-tokenize just the text from its last boundary token on.
"""

from __future__ import annotations

import functools
import logging
import weakref
from collections.abc import Callable, Sequence
from typing import Any

logger = logging.getLogger(__name__)

# Where a character is checked: alone, repeated, next to each kind of character the split
# patterns distinguish (letters, digits, spaces, newlines, punctuation, CJK) and inside each
# contraction GPT-style patterns match case-insensitively ('s, 're, 've, 'll, ...).
_NEIGHBOURS = ("a", "Z", "1", " ", "  ", "\n", "\t", "!", "'", "_", "-", "中", "ß")
CONTEXTS: tuple[str, ...] = (
    "{c}",
    "{c}{c}",
    "{c}{c}{c} ",
    *(f"{n}{{c}}" for n in _NEIGHBOURS),
    *(f"{{c}}{n}" for n in _NEIGHBOURS),
    *(f"{n}{{c}}{n}" for n in _NEIGHBOURS),
    "'{c}e",
    "'r{c}",
    "'v{c}",
    "'l{c}",
    "'{c}l",
    "x {c} y",
    "1{c}1",
)
# Text every candidate encoder must encode exactly as the reference before it is used (the
# boundary tokens are added to it).
_PROBE = (
    "Probe  text,\n\tcode() {x: 1}\n  def f(a, b=2):\n\treturn a+b  # it's 3'S, we'll've\r\n\n"
    "   indented\t\tx  \n\n\n 12345 1.5e-3 ===== ''' \"\"\" \\n\\t é日😀 end\n\n"
)


def encode(tokenizer: Any, text: str) -> list[int]:
    """Token ids of rendered template text; the template already wrote any BOS it wants."""
    return list(tokenizer.encode(text, add_special_tokens=False))


class _CheckedBpe:
    """``ByteLevelBpe``, each non-ASCII character checked against the reference on first sight."""

    def __init__(self, bpe: Any, backend: Any, reference: Callable[[str], list[int]], separator: str | None) -> None:
        self.bpe = bpe
        self.reference = reference
        self.pre_tokenizer = getattr(backend, "pre_tokenizer", None)
        self.normalizer = getattr(backend, "normalizer", None)
        self.separator = separator

    def __call__(self, text: str) -> list[int]:
        try:
            ids = self.bpe.encode(text)
        except UnicodeEncodeError:  # a lone surrogate: the reference raises its own error for it
            return self.reference(text)
        if ids is None:
            unknown = self.bpe.unknown_chars(text)
            if unknown:
                self.check(unknown)
                ids = self.bpe.encode(text)
            if ids is None:
                return self.reference(text)
        return ids

    def check(self, chars: str) -> None:
        """Vouches for each character that every context treats alike in both encoders; refuses the rest."""
        if self.separator is not None and len(chars) > 1 and self._agree(self._joined(chars)):
            for c in chars:
                self.bpe.set_char(c, True)
            return
        for c in chars:
            contexts = [ctx.format(c=c) for ctx in CONTEXTS]
            texts = [self._joined(c)] if self.separator is not None else contexts
            self.bpe.set_char(c, all(self._agree(t) for t in texts))

    def _joined(self, chars: str) -> str:
        # An added token between contexts: both encoders split on it first, so each context is
        # encoded on its own, in one call.
        return str(self.separator).join(ctx.format(c=c) for c in chars for ctx in CONTEXTS)

    def _agree(self, text: str) -> bool:
        try:
            if self.normalizer is not None and self.normalizer.normalize_str(text) != text:
                return False
            if self.pre_tokenizer is not None:
                theirs = [span for _, span in self.pre_tokenizer.pre_tokenize_str(text)]
                if self.bpe.pre_tokenize(text) != theirs:
                    return False
            return self.bpe.encode_unchecked(text) == self.reference(text)
        except Exception:  # noqa: BLE001 - a context either side cannot handle is a disagreement
            return False


class Tokenization:
    """A tokenizer's boundary tokens, its fastest exact encoder (``encode``; see the module docstring) and
    decoder (``decode``: ``tokenizer.decode(ids, skip_special_tokens=False)``'s text)."""

    def __init__(self, tokenizer: Any) -> None:
        ids = set(getattr(tokenizer, "all_special_ids", None) or [])
        added = getattr(tokenizer, "get_added_vocab", None)
        if callable(added):
            ids.update(int(i) for i in added().values())
        decode = tokenizer.decode
        self.texts: dict[int, str] = {}
        for i in ids:
            text = decode([i], skip_special_tokens=False)
            if isinstance(text, str) and text:
                self.texts[i] = text
        try:
            size = max([len(tokenizer), *(i + 1 for i in self.texts)])
        except TypeError:  # no len()
            size = 0
        # ints[i] is i: token lists built from it share one int object per id instead of one per token
        # (28 bytes a token saved in every long-lived prompt list).
        self.ints = tuple(range(size))
        self.reference: Callable[[str], list[int]] = functools.partial(encode, tokenizer)
        self.encoder, self.encode = self._fastest(tokenizer)
        self.decode = self._decoder(tokenizer)

    def _fastest(self, tokenizer: Any) -> tuple[str, Callable[[str], list[int]]]:
        """``(name, encoder)``: the first candidate that gives the reference's ids on the probe text."""
        backend = getattr(tokenizer, "backend_tokenizer", None)
        if backend is None:
            return "encode", self.reference
        probe = _PROBE + "\n".join(self.texts.values())
        expected = self.reference(probe)
        for name, build in (("hermes_bpe", self._hermes_bpe), ("encode_batch_fast", self._batch_fast)):
            try:
                encoder = build(tokenizer, backend)
                if encoder is not None and encoder(probe) == expected:
                    return name, encoder
            except Exception as err:  # noqa: BLE001 - a candidate that fails is not used
                logger.debug("managed server: %s not used for this tokenizer: %s", name, err)
        return "encode", self.reference

    def _hermes_bpe(self, tokenizer: Any, backend: Any) -> Callable[[str], list[int]] | None:
        if getattr(backend, "encode_special_tokens", False) or getattr(tokenizer, "split_special_tokens", False):
            return None  # special tokens encoded as text: not what ByteLevelBpe does
        from hermes_env._core import ByteLevelBpe

        bpe = ByteLevelBpe(backend.to_str(), self.ints)  # ValueError (with the reason) for models it does not reproduce
        separator = next((t for t in self.texts.values() if t.isascii()), None)
        return _CheckedBpe(bpe, backend, self.reference, separator)

    def _decoder(self, tokenizer: Any) -> Callable[[list[int]], str]:
        """``tokenizer.decode(ids, skip_special_tokens=False)``, or the Rust backend's ``decode`` (no
        ``transformers`` wrapper) when it gives the same text for the probe's ids (it does unless the tokenizer
        cleans up spaces or decodes in Python)."""

        def reference(ids: list[int]) -> str:
            return tokenizer.decode(ids, skip_special_tokens=False)

        backend = getattr(getattr(tokenizer, "backend_tokenizer", None), "decode", None)
        if not callable(backend):
            return reference
        ids = [*self.reference(_PROBE + " . , ! ? 's n't ( ) -- a .b"), *self.texts]

        def decode(ids: list[int]) -> str:
            return backend(ids, skip_special_tokens=False)

        try:
            same = all(decode(part) == reference(part) for part in (ids, ids[:1], ids[-3:], ids[5:20]))
        except Exception:  # noqa: BLE001 - a backend that cannot decode these ids is not used
            same = False
        return decode if same else reference

    @staticmethod
    def _batch_fast(tokenizer: Any, backend: Any) -> Callable[[str], list[int]] | None:
        fast = getattr(backend, "encode_batch_fast", None)
        if not callable(fast):
            return None

        def encode_batch_fast(text: str) -> list[int]:
            return list(fast([text], add_special_tokens=False)[0].ids)

        return encode_batch_fast

    def intern(self, ids: Sequence[int]) -> list[int]:
        """``ids`` as a list of the shared int objects (see ``ints``); ids outside the table are kept as they are."""
        ints = self.ints
        if ids and 0 <= min(ids) and max(ids) < len(ints):
            return list(map(ints.__getitem__, ids))
        return list(ids)

    def tail(self, text: str, ids: Sequence[int], before: tuple[str, int] = ("", 0)) -> tuple[str, int]:
        """``(text from the last boundary token on, how many ids that is)``, for ``ids`` = encode(text).

        ``before`` is the tail of what precedes ``text`` (used when ``ids`` holds no boundary token).
        """
        texts = self.texts
        for i in range(len(ids) - 1, -1, -1):
            piece = texts.get(ids[i])
            if piece is not None:
                at = text.rfind(piece)
                if at >= 0:
                    return text[at:], len(ids) - i
                break
        return before[0] + text, before[1] + len(ids)


_tokenizations: weakref.WeakKeyDictionary[Any, Tokenization] = weakref.WeakKeyDictionary()


def tokenization(tokenizer: Any) -> Tokenization:
    """The tokenizer's :class:`Tokenization`, built once per tokenizer."""
    try:
        found = _tokenizations.get(tokenizer)
    except TypeError:  # not weak-referenceable
        return Tokenization(tokenizer)
    if found is None:
        found = _tokenizations[tokenizer] = Tokenization(tokenizer)
    return found
