"""File tools (toolset ``file``): ``read_file``, ``write_file``, ``patch``, ``search_files``.

All paths are workspace-relative (absolute paths are taken as workspace-rooted); the backend
refuses anything that resolves outside the workspace.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from hermes_env.backends.base import ExecutionBackend
from hermes_env.errors import WorkspacePathError
from hermes_env.tools.output import truncate_head
from hermes_env.tools.registry import Tool, ToolArgumentError, ToolCallError, ToolRunContext
from hermes_env.tools.schema import object_schema

T = TypeVar("T")

MAX_LINE_CHARS = 2000
DEFAULT_READ_LIMIT = 500
SEARCH_MAX_MATCHES = 200
SEARCH_MAX_FILES = 5000
SEARCH_MAX_FILE_BYTES = 2 * 1024 * 1024
SEARCH_SKIP_DIRS = frozenset({".git", "__pycache__", "node_modules", ".venv", ".mypy_cache"})
PATH_PARAM = {"type": "string", "minLength": 1, "description": "File path, relative to the workspace."}


async def backend_call(what: str, fn: Callable[[], Awaitable[T]]) -> T:
    """Run a backend file operation, turning the usual failures into messages for the model."""
    try:
        return await fn()
    except FileNotFoundError:
        raise ToolCallError(f"{what}: no such file or directory") from None
    except IsADirectoryError:
        raise ToolCallError(f"{what}: is a directory") from None
    except NotADirectoryError:
        raise ToolCallError(f"{what}: a parent of this path is a file, not a directory") from None
    except WorkspacePathError as exc:
        raise ToolCallError(f"refused: {exc}") from None
    except PermissionError as exc:
        raise ToolCallError(f"{what}: permission denied ({exc})") from None
    except (ValueError, OSError) as exc:
        raise ToolCallError(f"{what}: {exc}") from None


def looks_binary(data: bytes) -> bool:
    return b"\x00" in data[:8192]


class ReadFileTool(Tool):
    name = "read_file"
    toolset = "file"
    description = (
        "Read a text file from the workspace. Returns lines prefixed with their 1-based line "
        "numbers. Use offset/limit to page through long files."
    )
    parameters = object_schema(
        {
            "path": PATH_PARAM,
            "offset": {"type": "integer", "minimum": 1, "description": "First line to show (1-based, default 1)."},
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": 5000,
                "description": f"Number of lines to show (default {DEFAULT_READ_LIMIT}).",
            },
        },
        required=("path",),
    )
    parallel_safe = True

    async def call(self, args: dict[str, Any], ctx: ToolRunContext) -> str:
        path = args["path"]
        data = await backend_call(path, lambda: ctx.backend.read_file(ctx.task_id, path))
        if looks_binary(data):
            raise ToolCallError(f"{path}: binary file ({len(data)} bytes); inspect it with terminal tools instead")
        lines = data.decode("utf-8", errors="replace").splitlines()
        if not lines:
            return f"{path}: (empty file)"
        offset = args.get("offset", 1)
        limit = args.get("limit", DEFAULT_READ_LIMIT)
        if offset > len(lines):
            raise ToolCallError(f"{path}: offset {offset} is past the end of the file ({len(lines)} lines)")
        shown = lines[offset - 1 : offset - 1 + limit]
        rendered = []
        for number, line in enumerate(shown, start=offset):
            if len(line) > MAX_LINE_CHARS:
                line = line[:MAX_LINE_CHARS] + f"... [line truncated, {len(line)} characters]"
            rendered.append(f"{number:6d}\t{line}")
        last = offset + len(shown) - 1
        text = "\n".join(rendered)
        if last < len(lines) or offset > 1:
            text += f"\n[lines {offset}-{last} of {len(lines)}"
            text += f"; use offset={last + 1} to read more]" if last < len(lines) else "]"
        return truncate_head(text, ctx.max_output_chars, "file listing")


class WriteFileTool(Tool):
    name = "write_file"
    toolset = "file"
    description = (
        "Create or overwrite a file in the workspace with the given content (parent directories "
        "are created). The whole file is replaced: use `patch` for small edits."
    )
    parameters = object_schema(
        {"path": PATH_PARAM, "content": {"type": "string", "description": "The complete new file content."}},
        required=("path", "content"),
    )

    async def call(self, args: dict[str, Any], ctx: ToolRunContext) -> str:
        path, content = args["path"], args["content"]
        data = content.encode("utf-8")
        await backend_call(path, lambda: ctx.backend.write_file(ctx.task_id, path, data))
        lines = content.count("\n") + (0 if content.endswith("\n") or not content else 1)
        return f"Wrote {len(data)} bytes ({lines} lines) to {path}"


class PatchTool(Tool):
    name = "patch"
    toolset = "file"
    description = (
        "Edit a file by replacing one exact occurrence of `old` with `new`. `old` must match the "
        "file's text exactly (whitespace and indentation included) and occur exactly once; add "
        "surrounding lines to make it unique. An empty `new` deletes the text."
    )
    parameters = object_schema(
        {
            "path": PATH_PARAM,
            "old": {"type": "string", "minLength": 1, "description": "The exact text to replace."},
            "new": {"type": "string", "description": "The replacement text."},
        },
        required=("path", "old", "new"),
    )

    async def call(self, args: dict[str, Any], ctx: ToolRunContext) -> str:
        path, old, new = args["path"], args["old"], args["new"]
        data = await backend_call(path, lambda: ctx.backend.read_file(ctx.task_id, path))
        if looks_binary(data):
            raise ToolCallError(f"{path}: binary file; patch only edits text files")
        text = data.decode("utf-8", errors="surrogateescape")
        count = text.count(old)
        if count == 0:
            hint = ""
            if old.strip() and old.strip() in text:
                hint = " (it does occur with different leading/trailing whitespace)"
            raise ToolCallError(
                f"{path}: `old` text not found{hint}; read the file and copy the text exactly, including indentation"
            )
        if count > 1:
            lines = [text.count("\n", 0, m.start()) + 1 for m in re.finditer(re.escape(old), text)]
            raise ToolCallError(
                f"{path}: `old` text occurs {count} times (lines {', '.join(map(str, lines[:10]))}); "
                "include more surrounding context so that it matches exactly once"
            )
        start = text.index(old)
        updated = text[:start] + new + text[start + len(old) :]
        encoded = updated.encode("utf-8", errors="surrogateescape")
        await backend_call(path, lambda: ctx.backend.write_file(ctx.task_id, path, encoded))
        first = text.count("\n", 0, start) + 1
        return (
            f"Patched {path}: replaced lines {first}-{first + old.count(chr(10))} "
            f"with {new.count(chr(10)) + 1 if new else 0} line(s)"
        )


@dataclass(frozen=True, slots=True)
class SearchMatch:
    path: str
    line: int
    text: str


@dataclass(frozen=True, slots=True)
class SearchResult:
    matches: list[SearchMatch]
    files_scanned: int
    truncated: bool  # stopped at max_matches or max_files
    skipped: int  # files skipped as binary or too large


def compile_pattern(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ToolArgumentError(f"search_files: invalid regular expression {pattern!r}: {exc}") from None


async def find_matches(
    backend: ExecutionBackend,
    task_id: str,
    pattern: str | re.Pattern[str],
    path: str = ".",
    *,
    max_matches: int = SEARCH_MAX_MATCHES,
    max_files: int = SEARCH_MAX_FILES,
) -> SearchResult:
    """Lines matching a regex in the workspace files under ``path`` (binary and huge files skipped)."""
    regex = compile_pattern(pattern) if isinstance(pattern, str) else pattern
    files = await backend_call(path, lambda: backend.list_files(task_id, path))
    matches: list[SearchMatch] = []
    scanned = skipped = 0
    truncated = False
    for rel in files:
        if any(part in SEARCH_SKIP_DIRS for part in rel.split("/")[:-1]):
            continue
        if scanned >= max_files:
            truncated = True
            break
        scanned += 1
        try:
            data = await backend.read_file(task_id, rel)
        except (OSError, ValueError):
            skipped += 1
            continue
        if len(data) > SEARCH_MAX_FILE_BYTES or looks_binary(data):
            skipped += 1
            continue
        for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), start=1):
            if regex.search(line):
                matches.append(SearchMatch(rel, number, line))
                if len(matches) >= max_matches:
                    return SearchResult(matches, scanned, True, skipped)
    return SearchResult(matches, scanned, truncated, skipped)


class SearchFilesTool(Tool):
    name = "search_files"
    toolset = "file"
    description = (
        "Search the workspace files for lines matching a regular expression (Python syntax). "
        "Returns `path:line: text` for each match, up to a limit."
    )
    parameters = object_schema(
        {
            "pattern": {"type": "string", "minLength": 1, "description": "Regular expression to search for."},
            "path": {"type": "string", "description": "File or directory to search (default: the whole workspace)."},
        },
        required=("pattern",),
    )
    parallel_safe = True

    async def call(self, args: dict[str, Any], ctx: ToolRunContext) -> str:
        path = args.get("path") or "."
        result = await find_matches(ctx.backend, ctx.task_id, args["pattern"], path)
        if not result.matches:
            return f"No matches for {args['pattern']!r} in {path} ({result.files_scanned} files searched)"
        lines = []
        for m in result.matches:
            text = m.text if len(m.text) <= 300 else m.text[:300] + "..."
            lines.append(f"{m.path}:{m.line}: {text}")
        summary = f"[{len(result.matches)} matches in {result.files_scanned} files searched"
        if result.truncated:
            summary += "; limit reached, narrow the pattern or path to see more"
        if result.skipped:
            summary += f"; {result.skipped} binary or oversized files skipped"
        summary += "]"
        return (
            truncate_head("\n".join(lines), ctx.max_output_chars - len(summary) - 1, "search results") + "\n" + summary
        )
