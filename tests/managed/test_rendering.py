"""The pieces of incremental rendering: tokenizer boundaries, the branch window, the new-turn text."""

from __future__ import annotations

import json
from typing import Any

from hermes_env.managed.rendering import WINDOW_TURNS, RenderState, new_turn_text, render_text, window_delta
from hermes_env.managed.response import split_reasoning
from hermes_env.managed.tokenization import Tokenization, encode
from hypothesis import given, settings
from hypothesis import strategies as st

pieces = st.text(alphabet=st.sampled_from(list('ab \n\t{}"<>/é日😀')), max_size=30)


@settings(max_examples=60)
@given(st.lists(st.tuples(pieces, pieces), min_size=1, max_size=6))
def test_tail_tokenizes_like_the_whole_text(tok: Any, turns: list[tuple[str, str]]) -> None:
    """encode(whole) == encode(before the tail) + encode(tail) at every turn: nothing merges across a boundary."""
    boundaries = Tokenization(tok)
    assert boundaries.encode("<|im_start|>x y") == encode(tok, "<|im_start|>x y")
    messages: list[dict[str, Any]] = [{"role": "system", "content": "sys"}]
    for user, reply in turns:
        messages.append({"role": "user", "content": user or "?"})
        text = render_text(tok, messages, None, {})
        ids = encode(tok, text)
        tail_text, tail_len = boundaries.tail(text, ids)
        assert text.endswith(tail_text) and 0 < tail_len <= len(ids)
        assert tok.decode(ids[-tail_len:]) == tail_text
        assert encode(tok, text[: len(text) - len(tail_text)]) + encode(tok, tail_text) == ids
        messages.append({"role": "assistant", "content": reply})


def test_tail_without_a_boundary_extends_the_one_before(tok: Any) -> None:
    boundaries = Tokenization(tok)
    assert boundaries.encode("<|im_start|>x y") == encode(tok, "<|im_start|>x y")
    ids = encode(tok, "plain text")
    assert boundaries.tail("plain text", ids, ("<|im_start|>x", 2)) == ("<|im_start|>xplain text", 2 + len(ids))


def conversation(turns: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "sys"}, {"role": "user", "content": "task"}]
    for k in range(turns):
        call = json.dumps({"name": "terminal", "arguments": {"command": f"ls {k}"}})
        messages.append(
            {"role": "assistant", "content": f"<think>\nr{k}\n</think>\n\n<tool_call>\n{call}\n</tool_call>"}
        )
        messages.append({"role": "tool", "tool_call_id": f"c{k}", "content": f"out {k}"})
    return messages


def test_window_keeps_the_last_replies_and_gives_the_full_render_suffix(tok: Any) -> None:
    """Built turn by turn as the managed server does, the window's new text is the full render's suffix."""
    messages = conversation(6)
    replies = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
    head = render_text(tok, messages[: replies[0]], None, {})
    state = RenderState.first(messages[: replies[0]], head, messages[replies[0]],
                              (messages[replies[0]]["content"] + "<|im_end|>", 0), ("", 0))  # fmt: skip
    trajectory = head + messages[replies[0]]["content"] + "<|im_end|>"
    for prev, at in zip(replies, replies[1:], strict=False):
        new = messages[prev + 1 : at]
        delta = window_delta(tok, state, new, None, {})
        full = render_text(tok, messages[:at], None, {})
        assert delta is not None and full == trajectory + delta
        completion = messages[at]["content"] + "<|im_end|>"
        trajectory += delta + completion
        state = state.advanced(new, delta, messages[at], (completion, 0), ("", 0))
        assert len(state.turns) <= WINDOW_TURNS and state.window_messages[0]["role"] == "assistant"
        assert trajectory.endswith(state.window_text)
    assert len(state.window_messages) == 2 * WINDOW_TURNS - 1


def test_window_refuses_a_template_that_renders_the_history_differently(tok: Any) -> None:
    messages = conversation(2)
    head = render_text(tok, messages[:2], None, {})
    # The trajectory holds a reply the template would render differently (no blank line after </think>).
    state = RenderState.first(messages[:2], head, messages[2], ("<think>\nr0\n</think><|im_end|>", 0), ("", 0))
    assert window_delta(tok, state, messages[3:4], None, {}) is None


def test_new_turn_is_the_text_after_the_last_reply(tok: Any) -> None:
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "<think>\nx\n</think>\n\nhello"},
        {"role": "user", "content": "bye"},
    ]
    text = new_turn_text(tok, messages, 1, None, {}, "<|im_end|>")
    assert text == "\n<|im_start|>user\nbye<|im_end|>\n<|im_start|>assistant\n"


def test_split_reasoning() -> None:
    assert split_reasoning("<think>\nr\n</think>\n\nans") == ("r", "ans")
    assert split_reasoning("r only</think>ans") == ("r only", "ans")
    assert split_reasoning("<think>cut off") == ("cut off", "")
    assert split_reasoning("plain") == (None, "plain")
    assert json.dumps(split_reasoning("")) == '[null, ""]'
