"""What ByteLevelBpe raises for what it cannot build from: BpeConfigError (a ConfigError and ValueError, so the
managed server's fallback to the tokenizer's own encoder still catches it), naming the reason."""

from __future__ import annotations

import json

import pytest
from hermes_env._core import ByteLevelBpe
from hermes_env.errors import BpeConfigError, ConfigError, HermesEnvError


def _byte_char(b: int) -> str:
    """GPT-2's byte-level alphabet: the character byte ``b`` is written as in the vocabulary."""
    printable = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    if b in printable:
        return chr(b)
    return chr(256 + sum(1 for x in range(b) if x not in printable))


def _tokenizer_json() -> str:
    """A byte-level BPE whose ids are the 256 bytes and no merges."""
    return json.dumps(
        {
            "truncation": None,
            "padding": None,
            "added_tokens": [],
            "normalizer": None,
            "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
            "model": {"type": "BPE", "vocab": {_byte_char(b): b for b in range(256)}, "merges": []},
        }
    )


def test_a_tokenizer_it_does_not_reproduce_names_the_part() -> None:
    assert ByteLevelBpe(_tokenizer_json()).encode("hi") == [ord("h"), ord("i")]
    wordpiece = json.loads(_tokenizer_json())
    wordpiece["model"]["type"] = "WordPiece"
    reason = r"not reproduced by ByteLevelBpe: model \"WordPiece\" \(only BPE\)"
    with pytest.raises(BpeConfigError, match=reason) as info:
        ByteLevelBpe(json.dumps(wordpiece))
    assert isinstance(info.value, ConfigError) and isinstance(info.value, HermesEnvError)
    assert isinstance(info.value, ValueError)


def test_an_ints_table_that_is_not_the_ints_says_which_item() -> None:
    with pytest.raises(BpeConfigError, match=r"ints\[1\] is not the int 1; pass a tuple whose item i is i"):
        ByteLevelBpe(_tokenizer_json(), (0, 5, 2))
