"""Incremental prompt encoding equals encoding the whole prompt, turn after turn."""

from __future__ import annotations

import json
from typing import Any

from hermes_env.managed.rendering import encode, encode_incremental, new_turn_ids, render_text
from hermes_env.managed.response import split_reasoning
from hypothesis import given, settings
from hypothesis import strategies as st

pieces = st.text(alphabet=st.sampled_from(list('ab \n\t{}"<>/é日😀')), max_size=30)


@settings(max_examples=60)
@given(st.lists(st.tuples(pieces, pieces), min_size=1, max_size=6))
def test_incremental_encoding_matches_full(tok: Any, turns: list[tuple[str, str]]) -> None:
    special = set(tok.all_special_ids)
    messages: list[dict[str, Any]] = [{"role": "system", "content": "sys"}]
    cache = None
    for user, reply in turns:
        messages.append({"role": "user", "content": user or "?"})
        text = render_text(tok, messages, None, {})
        ids, cache = encode_incremental(tok, text, cache, special)
        assert ids.tolist() == encode(tok, text)
        assert cache is None or (text.startswith(cache.text) and cache.ids.tolist() == encode(tok, cache.text))
        messages.append({"role": "assistant", "content": reply})


def test_new_turn_is_the_text_after_the_last_reply(tok: Any) -> None:
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "<think>\nx\n</think>\n\nhello"},
        {"role": "user", "content": "bye"},
    ]
    ids = new_turn_ids(tok, messages, 1, None, {}, "<|im_end|>")
    assert tok.decode(ids) == "\n<|im_start|>user\nbye<|im_end|>\n<|im_start|>assistant\n"


def test_split_reasoning() -> None:
    assert split_reasoning("<think>\nr\n</think>\n\nans") == ("r", "ans")
    assert split_reasoning("r only</think>ans") == ("r only", "ans")
    assert split_reasoning("<think>cut off") == ("cut off", "")
    assert split_reasoning("plain") == (None, "plain")
    assert json.dumps(split_reasoning("")) == '[null, ""]'
