"""Bounding what a tool hands back to the model: results never exceed ``max_chars``, notes included."""

from __future__ import annotations


def truncate_middle(text: str, max_chars: int) -> str:
    """Keep the head and tail of ``text`` (errors tend to be at the end) with a note in between."""
    if max_chars <= 0:
        raise ValueError(f"max_chars must be positive, got {max_chars}")
    if len(text) <= max_chars:
        return text
    note = f"\n\n[... {len(text)} characters in all; the middle was omitted to fit {max_chars} ...]\n\n"
    budget = max_chars - len(note)
    if budget < 20:  # too small a budget for a note: plain cut
        return text[:max_chars]
    head = budget * 2 // 5
    tail = budget - head
    return f"{text[:head]}{note}{text[len(text) - tail :]}"


def truncate_head(text: str, max_chars: int, what: str = "output") -> str:
    """Keep the beginning of ``text`` with a note saying how much was cut."""
    if max_chars <= 0:
        raise ValueError(f"max_chars must be positive, got {max_chars}")
    if len(text) <= max_chars:
        return text
    note = f"\n[{what} truncated: {len(text)} characters in all, only the first part is shown]"
    if max_chars - len(note) < 20:
        return text[:max_chars]
    return text[: max_chars - len(note)] + note
