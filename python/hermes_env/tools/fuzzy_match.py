"""Find-and-replace that tolerates the small differences model-written edits have (hermes-agent's ``patch``).

hermes-agent's ``patch`` tool tries a chain of matching strategies, from exact to loose, and
uses the first that finds anything (the order and thresholds below are hermes-agent's):

1. ``exact``                  the text as given
2. ``line_trimmed``           each line compared with surrounding whitespace stripped
3. ``whitespace_normalized``  runs of spaces/tabs compared as one space
4. ``indentation_flexible``   leading whitespace of each line ignored
5. ``escape_normalized``      literal ``\\n``/``\\t``/``\\r`` in the pattern read as the characters
6. ``trimmed_boundary``       first and last line compared stripped, the rest exactly
7. ``block_anchor``           first and last line equal (stripped), middle >= 70% similar
8. ``context_aware``          at least half the lines >= 80% similar

More than one match is an error unless ``replace_all``. This module is pure and stdlib-only
(it also runs inside sandboxes for ``execute_code``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from difflib import SequenceMatcher

Span = tuple[int, int]

BLOCK_ANCHOR_SIMILARITY = 0.70
CONTEXT_LINE_SIMILARITY = 0.80
CONTEXT_MIN_LINE_FRACTION = 0.5


def fuzzy_find_and_replace(
    content: str, old_string: str, new_string: str, replace_all: bool = False
) -> tuple[str, int, str | None]:
    """``(new_content, replacements, error)``; on failure the content comes back unchanged with 0."""
    if not old_string:
        return content, 0, "old_string cannot be empty"
    if old_string == new_string:
        return content, 0, "old_string and new_string are identical"
    _, spans = find_matches(content, old_string)
    if not spans:
        return content, 0, "Could not find a match for old_string in the file"
    if len(spans) > 1 and not replace_all:
        return (
            content,
            0,
            f"Found {len(spans)} matches for old_string. "
            "Provide more context to make it unique, or use replace_all=True.",
        )
    kept = _non_overlapping(spans)
    return replace_spans(content, kept, new_string), len(kept), None


def find_matches(content: str, pattern: str) -> tuple[str | None, list[Span]]:
    """The first strategy that matches and its spans in ``content`` (overlapping ones included, so
    ``"aa"`` in ``"aaa"`` counts as two matches: ambiguous, as hermes-agent treats it)."""
    for name, strategy in STRATEGIES:
        spans = strategy(content, pattern)
        if spans:
            return name, spans
    return None, []


def replace_spans(content: str, spans: list[Span], replacement: str) -> str:
    out, last = [], 0
    for start, end in sorted(spans):
        out.append(content[last:start])
        out.append(replacement)
        last = end
    out.append(content[last:])
    return "".join(out)


def _non_overlapping(spans: list[Span]) -> list[Span]:
    kept: list[Span] = []
    for start, end in sorted(spans):
        if not kept or start >= kept[-1][1]:
            kept.append((start, end))
    return kept


def _exact(content: str, pattern: str) -> list[Span]:
    spans, start = [], 0
    while (pos := content.find(pattern, start)) != -1:
        spans.append((pos, pos + len(pattern)))
        start = pos + 1
    return spans


def _line_offsets(lines: list[str]) -> list[int]:
    """Start offset of each line in the text ``"\\n".join(lines)`` (one extra entry: the end + 1)."""
    offsets, pos = [], 0
    for line in lines:
        offsets.append(pos)
        pos += len(line) + 1
    offsets.append(pos)
    return offsets


def _line_blocks(content: str, pattern: str, same: Callable[[list[str], list[str]], bool]) -> list[Span]:
    """Spans of whole-line blocks of ``content`` that ``same`` accepts against the pattern's lines."""
    lines = content.split("\n")
    wanted = pattern.split("\n")
    offsets = _line_offsets(lines)
    n = len(wanted)
    spans = []
    for i in range(len(lines) - n + 1):
        if same(lines[i : i + n], wanted):
            spans.append((offsets[i], min(offsets[i + n] - 1, len(content))))
    return spans


def _line_trimmed(content: str, pattern: str) -> list[Span]:
    return _line_blocks(content, pattern, lambda got, want: [g.strip() for g in got] == [w.strip() for w in want])


_SPACES = re.compile(r"[ \t]+")


def _whitespace_normalized(content: str, pattern: str) -> list[Span]:
    wanted = _SPACES.sub(" ", pattern)
    # The normalized content, with the original offset of each of its characters.
    chars: list[str] = []
    origin: list[int] = []
    for m in re.finditer(r"[ \t]+|[^ \t]+", content):
        if m.group()[0] in " \t":
            chars.append(" ")
            origin.append(m.start())
        else:
            chars.extend(m.group())
            origin.extend(range(m.start(), m.end()))
    normalized = "".join(chars)
    spans = []
    for start, end in _exact(normalized, wanted):
        orig_start = origin[start]
        orig_end = origin[end - 1] + 1
        # A pattern ending in whitespace swallows the whole run it matched.
        while orig_end < len(content) and content[orig_end] in " \t" and normalized[end - 1] == " ":
            orig_end += 1
        spans.append((orig_start, orig_end))
    return spans


def _indentation_flexible(content: str, pattern: str) -> list[Span]:
    return _line_blocks(content, pattern, lambda got, want: [g.lstrip() for g in got] == [w.lstrip() for w in want])


def _escape_normalized(content: str, pattern: str) -> list[Span]:
    unescaped = pattern.replace("\\n", "\n").replace("\\t", "\t").replace("\\r", "\r")
    return [] if unescaped == pattern else _exact(content, unescaped)


def _trim_ends(lines: list[str]) -> list[str]:
    out = list(lines)
    out[0] = out[0].strip()
    if len(out) > 1:
        out[-1] = out[-1].strip()
    return out


def _trimmed_boundary(content: str, pattern: str) -> list[Span]:
    return _line_blocks(content, pattern, lambda got, want: _trim_ends(got) == _trim_ends(want))


def _block_anchor(content: str, pattern: str) -> list[Span]:
    if pattern.count("\n") < 1:
        return []

    def same(got: list[str], want: list[str]) -> bool:
        if got[0].strip() != want[0].strip() or got[-1].strip() != want[-1].strip():
            return False
        if len(want) <= 2:
            return True
        ratio = SequenceMatcher(None, "\n".join(got[1:-1]), "\n".join(want[1:-1])).ratio()
        return ratio >= BLOCK_ANCHOR_SIMILARITY

    return _line_blocks(content, pattern, same)


def _context_aware(content: str, pattern: str) -> list[Span]:
    def same(got: list[str], want: list[str]) -> bool:
        close = sum(
            1
            for g, w in zip(got, want, strict=True)
            if SequenceMatcher(None, w.strip(), g.strip()).ratio() >= CONTEXT_LINE_SIMILARITY
        )
        return close >= len(want) * CONTEXT_MIN_LINE_FRACTION

    return _line_blocks(content, pattern, same)


STRATEGIES: tuple[tuple[str, Callable[[str, str], list[Span]]], ...] = (
    ("exact", _exact),
    ("line_trimmed", _line_trimmed),
    ("whitespace_normalized", _whitespace_normalized),
    ("indentation_flexible", _indentation_flexible),
    ("escape_normalized", _escape_normalized),
    ("trimmed_boundary", _trimmed_boundary),
    ("block_anchor", _block_anchor),
    ("context_aware", _context_aware),
)
