"""The V4A patch format (codex, cline, hermes-agent's ``patch`` in ``mode="patch"``): parse and apply.

::

    *** Begin Patch
    *** Update File: path/to/file.py
    @@ optional context hint @@
     context line
    -removed line
    +added line
    *** Add File: path/to/new.py
    +first line
    *** Delete File: path/to/old.py
    *** Move File: old/path.py -> new/path.py
    *** End Patch

Grammar as hermes-agent accepts it: the Begin/End markers are optional, a hunk line without a
``+``/``-``/space prefix is context, ``\\ No newline at end of file`` is skipped, an ``Add File``
body is its ``+`` lines joined with newlines (no newline added at the end). Also accepted:
codex's ``*** Move to: new/path`` right after an ``Update File`` line. Where this differs from
hermes-agent: an empty line inside a hunk is a blank context line (hermes-agent drops it, so the
hunk no longer matches a file with a blank line there), and a hunk that only adds lines is
inserted after its context hint's line, or appended at the end without one (hermes-agent skips
such a hunk silently). Pure and stdlib-only: it also runs inside sandboxes for ``execute_code``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from hermes_env.tools.fuzzy_match import fuzzy_find_and_replace

OperationKind = Literal["add", "update", "delete", "move"]

_UPDATE = re.compile(r"\*\*\*\s*Update\s+File:\s*(.+)")
_ADD = re.compile(r"\*\*\*\s*Add\s+File:\s*(.+)")
_DELETE = re.compile(r"\*\*\*\s*Delete\s+File:\s*(.+)")
_MOVE = re.compile(r"\*\*\*\s*Move\s+File:\s*(.+?)\s*->\s*(.+)")
_MOVE_TO = re.compile(r"\*\*\*\s*Move\s+to:\s*(.+)")
_HINT = re.compile(r"@@\s*(.+?)\s*@@")
# How far around a context hint a hunk that failed on the whole file is searched again (hermes-agent's window).
HINT_WINDOW_BEFORE = 500
HINT_WINDOW_AFTER = 2000


@dataclass
class Hunk:
    context_hint: str | None = None
    lines: list[tuple[str, str]] = field(default_factory=list)  # (prefix, text), prefix in " ", "-", "+"

    @property
    def search_text(self) -> str:
        return "\n".join(text for prefix, text in self.lines if prefix != "+")

    @property
    def replace_text(self) -> str:
        return "\n".join(text for prefix, text in self.lines if prefix != "-")

    def trim_trailing_blank_context(self) -> None:
        while self.lines and self.lines[-1] == (" ", ""):
            self.lines.pop()


@dataclass
class PatchOperation:
    kind: OperationKind
    path: str
    new_path: str | None = None
    hunks: list[Hunk] = field(default_factory=list)

    @property
    def added_content(self) -> str:
        """An ``add`` operation's file content: its ``+`` lines."""
        return "\n".join(text for hunk in self.hunks for prefix, text in hunk.lines if prefix == "+")


def parse_v4a_patch(patch: str) -> tuple[list[PatchOperation], str | None]:
    """``(operations, None)``, or ``([], error)`` when the text holds no file operation."""
    lines = patch.split("\n")
    start, end = -1, len(lines)
    for i, line in enumerate(lines):
        if "*** Begin Patch" in line or "***Begin Patch" in line:
            start = i
        elif "*** End Patch" in line or "***End Patch" in line:
            end = i
            break
    operations: list[PatchOperation] = []
    current: PatchOperation | None = None
    hunk: Hunk | None = None

    def close() -> None:
        nonlocal current, hunk
        if current is not None:
            if hunk is not None:
                hunk.trim_trailing_blank_context()
                if hunk.lines:
                    current.hunks.append(hunk)
            operations.append(current)
        current, hunk = None, None

    for line in lines[start + 1 : end]:
        if m := _MOVE.match(line):
            close()
            operations.append(PatchOperation("move", m.group(1).strip(), new_path=m.group(2).strip()))
        elif m := _UPDATE.match(line):
            close()
            current = PatchOperation("update", m.group(1).strip())
        elif m := _ADD.match(line):
            close()
            current, hunk = PatchOperation("add", m.group(1).strip()), Hunk()
        elif m := _DELETE.match(line):
            close()
            operations.append(PatchOperation("delete", m.group(1).strip()))
        elif (m := _MOVE_TO.match(line)) and current is not None and current.kind == "update" and not current.hunks:
            current.new_path = m.group(1).strip()
        elif line.startswith("@@"):
            if current is None:
                continue
            if hunk is not None:
                hunk.trim_trailing_blank_context()
                if hunk.lines:
                    current.hunks.append(hunk)
            hint = _HINT.match(line)
            hunk = Hunk(context_hint=hint.group(1) if hint else None)
        elif current is not None:
            if line.startswith("\\"):
                continue  # "\ No newline at end of file"
            if hunk is None:
                hunk = Hunk()
            if line[:1] in ("+", "-", " "):
                hunk.lines.append((line[0], line[1:]))
            else:
                hunk.lines.append((" ", line))
    close()
    if not operations:
        return [], (
            "no file operation found; a V4A patch needs lines like '*** Update File: path', "
            "'*** Add File: path', '*** Delete File: path' or '*** Move File: old -> new'"
        )
    return operations, None


def apply_hunks(content: str, hunks: list[Hunk]) -> tuple[str, str | None]:
    """``content`` with every hunk applied in order, or ``(content, error)`` at the first that does not fit."""
    for number, hunk in enumerate(hunks, start=1):
        search, replacement = hunk.search_text, hunk.replace_text
        if not any(prefix != "+" for prefix, _ in hunk.lines):
            content = _insert(content, hunk.context_hint, replacement)
            continue
        updated, count, error = fuzzy_find_and_replace(content, search, replacement)
        if count == 0 and hunk.context_hint:
            at = content.find(hunk.context_hint)
            if at != -1:
                lo, hi = max(0, at - HINT_WINDOW_BEFORE), min(len(content), at + HINT_WINDOW_AFTER)
                window, count, error = fuzzy_find_and_replace(content[lo:hi], search, replacement)
                if count:
                    updated = content[:lo] + window + content[hi:]
        if count == 0:
            return content, f"hunk {number} does not apply: {error}"
        content = updated
    return content, None


def _insert(content: str, hint: str | None, added: str) -> str:
    """A hunk of only added lines: after the line holding ``hint``, else at the end of the file."""
    if hint:
        at = content.find(hint)
        if at != -1:
            eol = content.find("\n", at)
            if eol == -1:
                return content + "\n" + added
            return content[: eol + 1] + added + "\n" + content[eol + 1 :]
    if content and not content.endswith("\n"):
        content += "\n"
    return content + added + "\n"
