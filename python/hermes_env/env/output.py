"""Writing scored groups: a jsonl that is never left with a torn line (its HTML view: hermes_env.html_view).

atroposlib's process mode writes groups through ``jsonlines`` (buffered: a crash can leave half
a line). Here each group is one ``os.write`` of a complete line on an ``O_APPEND`` descriptor.
"""

from __future__ import annotations

import json
import os
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
