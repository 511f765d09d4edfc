"""``<think>`` reasoning in a model's output: where it ends and the answer starts.

Qwen3 and DeepSeek-R1 style models write their reasoning in a ``<think>...</think>`` block before
the answer. The chat template may already have put the opening tag in the prompt, so an output may
hold only the closing tag; an output cut by ``max_tokens`` inside the block has no closing tag.
"""

from __future__ import annotations

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"


def split_reasoning(raw: str) -> tuple[str | None, str]:
    """``(reasoning, rest)``: the ``<think>`` block's text and what follows it; ``(None, raw)`` without one.

    Text before the first ``</think>`` (after a ``<think>`` when there is one) is the reasoning, newlines
    around it dropped; an unclosed ``<think>`` at the start (output cut by ``max_tokens``) is all reasoning.
    """
    if THINK_CLOSE in raw:
        before, after = raw.split(THINK_CLOSE, 1)
        reasoning = before.split(THINK_OPEN, 1)[-1].strip("\n")
        return reasoning, after.lstrip("\n")
    stripped = raw.lstrip()
    if stripped.startswith(THINK_OPEN):
        return stripped[len(THINK_OPEN) :].strip("\n"), ""
    return None, raw
