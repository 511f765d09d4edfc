"""Is the teacher's tokenizer the student's? Distillation scores the student's token ids, so it must be."""

from __future__ import annotations

from typing import Any

__all__ = ["tokenizer_mismatch"]


def tokenizer_mismatch(student: Any, teacher: Any) -> str | None:
    """None when both tokenizers map every token id to the same token; else what differs, in words."""
    a, b = student.get_vocab(), teacher.get_vocab()
    if len(a) != len(b):
        return f"{len(b)} tokens against the student's {len(a)}"
    by_id_a = {i: t for t, i in a.items()}
    differing = [i for t, i in b.items() if by_id_a.get(i) != t]
    if differing:
        first = min(differing)
        return (
            f"{len(differing)} token ids map to other tokens, e.g. id {first}: {by_id_a.get(first)!r} for the student, "
            f"{next(t for t, i in b.items() if i == first)!r} for the teacher"
        )
    return None
