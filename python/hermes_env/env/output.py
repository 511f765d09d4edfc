"""Writing scored groups: a jsonl that is never left with a torn line, and its readable HTML.

atroposlib's process mode writes groups through ``jsonlines`` (buffered: a crash can leave half
a line) and renders HTML from ``messages`` showing only role and content. Here each group is
one ``os.write`` of a complete line on an ``O_APPEND`` descriptor, and the HTML is rendered by
atroposlib's own ``generate_html`` from a display copy in which tool calls are visible.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


class GroupJsonlWriter:
    """``write(group)`` appends one complete JSON line; nothing is buffered in Python."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.lines_written = 0

    def write(self, obj: Any) -> None:
        if self._fd is None:
            raise ValueError(f"{self.path} is closed")
        # Serialise fully first: an object that cannot be encoded raises before anything is written.
        data = (json.dumps(obj, ensure_ascii=False) + "\n").encode("utf-8")
        view = memoryview(data)
        while view:  # a regular file takes it in one write; loop only for the rare short write
            written = os.write(self._fd, view)
            view = view[written:]
        self.lines_written += 1

    def close(self) -> None:
        if self._fd is not None:
            os.fsync(self._fd)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> GroupJsonlWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _display_message(message: dict[str, Any]) -> dict[str, Any]:
    """Role + content with reasoning and tool calls written into the content, for the HTML view."""
    parts = []
    reasoning = message.get("reasoning_content")
    if reasoning:
        parts.append(f"<think>{reasoning}</think>")
    if message.get("content"):
        parts.append(str(message["content"]))
    for call in message.get("tool_calls") or []:
        function = call.get("function", {})
        parts.append(f"```tool_call\n{function.get('name')}({function.get('arguments')})\n```")
    role = message.get("role", "unknown")
    if role == "tool":
        parts = [f"```\n{message.get('content', '')}\n```"]
    return {"role": role, "content": "\n\n".join(parts)}


def write_html(jsonl_path: str | os.PathLike[str], html_path: str | os.PathLike[str] | None = None) -> Path:
    """Render the groups in ``jsonl_path`` to HTML (default: same stem, ``.html``) and return its path."""
    from atroposlib.frontend.jsonl2html import generate_html

    source = Path(jsonl_path)
    target = Path(html_path) if html_path is not None else source.with_suffix(".html")
    with tempfile.TemporaryDirectory() as tmp:
        display = Path(tmp) / source.name
        with source.open(encoding="utf-8") as fin, display.open("w", encoding="utf-8") as fout:
            for line in fin:
                if not line.strip():
                    continue
                group = json.loads(line)
                messages = group.get("messages") or [[] for _ in group.get("scores", [])]
                shown = {
                    "scores": group.get("scores", []),
                    "messages": [[_display_message(m) for m in conv] for conv in messages],
                }
                fout.write(json.dumps(shown) + "\n")
        generate_html(str(display), str(target))
    return target
