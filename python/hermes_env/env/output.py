"""Writing scored groups: a jsonl of whole lines only (its HTML view: :mod:`hermes_env.html_view`).

atroposlib's process mode writes groups through ``jsonlines`` (buffered: a crash can leave half
a line). Here each group is one ``os.write`` of a complete line on an ``O_APPEND`` descriptor.

Torn lines. A write that fails part-way (disk full) is rolled back: the file is cut back to
where the line began. A process killed by SIGKILL in the middle of a write can still leave a
partial last line — Linux stops a buffered write at a page boundary when a fatal signal is
pending, and the process never runs again to finish it. That tail is removed the next time a
run starts on the same path (:func:`repair_torn_tail`, called by :func:`replace_atropos_writer`
for the path and the numbered siblings atroposlib steps over), and the readers (:func:`iter_groups`,
kept with the HTML view in :mod:`hermes_env.html_view.render`) ignore it meanwhile.

No empty files: the file is created by the first group written, so a run that writes nothing
(bad input, every group dropped, interrupted before the first group) leaves no ``.jsonl``.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

# The readers live with the HTML view, which sits below this package and reads these files too.
from hermes_env.html_view.render import iter_groups, iter_lines, read_groups

__all__ = [
    "GroupJsonlWriter",
    "iter_groups",
    "iter_lines",
    "read_groups",
    "repair_torn_tail",
    "replace_atropos_writer",
]

logger = logging.getLogger(__name__)


class GroupJsonlWriter:
    """``write(group)`` appends one complete JSON line; nothing is buffered in Python.

    The file is opened (created) on the first write; a torn last line left by a killed run is
    removed then, before anything is appended after it.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._fd: int | None = None
        self._closed = False
        self.lines_written = 0

    def _open(self) -> int:
        if self._closed:
            raise ValueError(f"{self.path} is closed")
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            repair_torn_tail(self.path)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        return self._fd

    def write(self, obj: Any) -> None:
        # Serialise fully first: an object that cannot be encoded raises before anything is written.
        data = (json.dumps(obj, ensure_ascii=False) + "\n").encode("utf-8")
        fd = self._open()
        start = os.fstat(fd).st_size
        view = memoryview(data)
        try:
            while view:  # a regular file takes it in one write; loop only for the rare short write
                written = os.write(fd, view)
                view = view[written:]
        except BaseException:
            os.ftruncate(fd, start)  # never leave part of a line behind (O_APPEND: only this writer appends)
            raise
        self.lines_written += 1

    def close(self) -> None:
        self._closed = True
        if self._fd is not None:
            os.fsync(self._fd)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> GroupJsonlWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def repair_torn_tail(path: str | os.PathLike[str]) -> int:
    """Cut ``path`` back to its last complete line; returns the bytes removed (0 when whole or absent)."""
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return 0
    try:
        size = os.fstat(fd).st_size
        end = size
        chunk = 1 << 16
        while end > 0:
            start = max(0, end - chunk)
            block = os.pread(fd, end - start, start)
            at = block.rfind(b"\n")
            if at >= 0:
                end = start + at + 1
                break
            end = start
        if end == size:
            return 0
        os.ftruncate(fd, end)
        os.fsync(fd)
    finally:
        os.close(fd)
    logger.warning(
        "%s ended with a torn line (%d bytes, left by a run that was killed while writing it); removed it",
        path,
        size - end,
    )
    return size - end


def replace_atropos_writer(
    atropos_writer: Any, requested: str | os.PathLike[str], path: str | os.PathLike[str]
) -> GroupJsonlWriter:
    """Close atroposlib's ``jsonlines`` writer, remove the empty file it created, repair earlier runs' files.

    atroposlib writes to ``path``: the ``requested`` path, or the first of ``<stem>_1``, ``<stem>_2``, ...
    that does not exist yet. The files it stepped over are earlier runs' output; a torn last line in
    them is removed.
    """
    atropos_writer.close()
    target = Path(path)
    if target.is_file() and target.stat().st_size == 0:
        target.unlink()  # atroposlib created it just now; ours is created by the first group
    first = Path(requested)
    previous, n = first, 1
    while previous != target and previous.is_file():
        repair_torn_tail(previous)
        previous, n = first.with_stem(f"{first.stem}_{n}"), n + 1
    return GroupJsonlWriter(target)
