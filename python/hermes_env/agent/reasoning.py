"""Reasoning text of one assistant turn, wherever the server put it.

Servers disagree: vLLM's reasoning parsers fill ``reasoning_content`` (older) or ``reasoning``
(newer), OpenRouter-style APIs use ``reasoning`` or a ``reasoning_details`` list of
``{"type", "text"|"summary", ...}`` parts, and a server without a reasoning parser leaves
Qwen3/DeepSeek-style ``<think>...</think>`` inside ``content``.
"""

from __future__ import annotations

from typing import Any

from hermes_env.message_fields import message_field
from hermes_env.parsers.reasoning import THINK_OPEN, split_reasoning


def separated_reasoning(message: Any) -> str | None:
    """Reasoning the server already split off: ``reasoning_content``, ``reasoning``, else the first
    ``reasoning_details`` part with a ``text`` (hermes-agent's order) or a ``summary``; or None."""
    for name in ("reasoning_content", "reasoning"):
        value = message_field(message, name)
        if isinstance(value, str) and value.strip():
            return value
    details = message_field(message, "reasoning_details")
    if isinstance(details, list | tuple):
        for key in ("text", "summary"):
            for detail in details:
                value = message_field(detail, key)
                if isinstance(value, str) and value.strip():
                    return value
    return None


def extract_reasoning(message: Any) -> str | None:
    """The reasoning of an assistant message (dict or openai object), or None when there is none."""
    separated = separated_reasoning(message)
    if separated is not None:
        return separated
    content = message_field(message, "content")
    if isinstance(content, str) and THINK_OPEN in content:
        reasoning, _ = split_reasoning(content)
        return (reasoning or "").strip() or None
    return None
