"""Bounding what a tool hands back to the model."""

from __future__ import annotations


def truncate_middle(text: str, max_chars: int) -> str:
    """Keep the head and tail of ``text`` (errors tend to be at the end) with a note in between."""
    if max_chars <= 0:
        raise ValueError("max_chars must be positive")
    if len(text) <= max_chars:
        return text
    head = max_chars * 2 // 5
    tail = max_chars - head
    dropped = len(text) - head - tail
    return f"{text[:head]}\n\n[... {dropped} characters omitted; output truncated to {max_chars} ...]\n\n{text[-tail:]}"


def truncate_head(text: str, max_chars: int, what: str = "output") -> str:
    """Keep the beginning of ``text`` with a note saying how much was cut."""
    if len(text) <= max_chars:
        return text
    return f"{text[:max_chars]}\n[{what} truncated: {len(text) - max_chars} more characters not shown]"
