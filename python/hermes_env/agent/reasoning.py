"""Reasoning text of one assistant turn, wherever the server put it.

Servers disagree: vLLM's reasoning parsers fill ``reasoning_content`` (older) or ``reasoning``
(newer), OpenRouter-style APIs use ``reasoning`` or a ``reasoning_details`` list of
``{"type", "text"|"summary", ...}`` parts, and a server without a reasoning parser leaves
Qwen3/DeepSeek-style ``<think>...</think>`` inside ``content``.
"""

from __future__ import annotations

import re
from typing import Any

_THINK = re.compile(r"<think>(.*?)(?:</think>|\Z)", re.DOTALL)


def _field(message: Any, name: str) -> Any:
    if isinstance(message, dict):
        return message.get(name)
    value = getattr(message, name, None)
    if value is None:
        # openai's pydantic models keep unknown response fields in model_extra.
        extra = getattr(message, "model_extra", None) or {}
        value = extra.get(name)
    return value


def separated_reasoning(message: Any) -> str | None:
    """Reasoning the server already split off: ``reasoning_content``, ``reasoning``, else the first
    ``reasoning_details`` part with a ``text`` (hermes-agent's order) or a ``summary``; or None."""
    for name in ("reasoning_content", "reasoning"):
        value = _field(message, name)
        if isinstance(value, str) and value.strip():
            return value
    details = _field(message, "reasoning_details")
    if isinstance(details, list | tuple):
        for key in ("text", "summary"):
            for detail in details:
                value = _field(detail, key)
                if isinstance(value, str) and value.strip():
                    return value
    return None


def extract_reasoning(message: Any) -> str | None:
    """The reasoning of an assistant message (dict or openai object), or None when there is none."""
    separated = separated_reasoning(message)
    if separated is not None:
        return separated
    content = _field(message, "content")
    if isinstance(content, str) and "<think>" in content:
        parts = [m.group(1).strip() for m in _THINK.finditer(content)]
        joined = "\n".join(p for p in parts if p)
        return joined or None
    return None
