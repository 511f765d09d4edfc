"""Text helpers for building URLs out of article titles."""

import re
import unicodedata

_NON_WORD = re.compile(r"[^a-z0-9]")


def strip_accents(text):
    """'Crème brûlée' -> 'Creme brulee'."""
    normalized = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in normalized if not unicodedata.combining(ch))


def slugify(title, max_length=60):
    """Lower-case, ASCII, words joined by single hyphens, no leading or trailing hyphen."""
    text = strip_accents(title).lower()
    slug = _NON_WORD.sub("-", text)
    return slug[:max_length]


def title_case(text):
    """Capitalise each word, keeping short joining words lower-case (except the first)."""
    small = {"a", "an", "and", "of", "the", "in", "on"}
    words = text.split()
    out = []
    for i, word in enumerate(words):
        out.append(word if i and word.lower() in small else word.capitalize())
    return " ".join(out)
