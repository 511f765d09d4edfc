"""File tools (toolset ``file``) with hermes-agent's schemas and JSON results: ``read_file``, ``write_file``,
``patch`` (replace mode with fuzzy matching, and V4A patch mode) and ``search_files``.

Paths are the model's, as hermes-agent takes them: relative to the workspace (the command's
working directory), absolute as the sandbox shows the workspace (``/workspace/...``), or ``~/...``
(``HOME`` is the workspace). The backend refuses anything that resolves outside the workspace.
The file operations go through the backend's file API, not through shell commands.
"""

from __future__ import annotations

import difflib
import fnmatch
import os
import posixpath
import re
import shlex
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from hermes_env.errors import ToolArgumentError, WorkspacePathError
from hermes_env.isolation.paths import workspace_relative
from hermes_env.tools.fuzzy_match import fuzzy_find_and_replace
from hermes_env.tools.registry import Tool, ToolCallContext
from hermes_env.tools.v4a import PatchOperation, apply_hunks, parse_v4a_patch

T = TypeVar("T")

MAX_LINES = 2000
MAX_LINE_LENGTH = 2000
DEFAULT_READ_LIMIT = 500
MATCH_CONTENT_CHARS = 500
SEARCH_MAX_FILE_BYTES = 2 * 1024 * 1024
SEARCH_SKIP_DIRS = frozenset({".git", "__pycache__", "node_modules", ".venv", ".mypy_cache", ".hermes_bg"})
BINARY_SAMPLE_CHARS = 1000
BINARY_CONTROL_FRACTION = 0.30

# hermes-agent's extension lists (tools/file_operations.py).
BINARY_EXTENSIONS = frozenset(
    ".png .jpg .jpeg .gif .webp .bmp .ico .tiff .tif .svg .mp3 .mp4 .wav .avi .mov .mkv .flac .ogg .webm "
    ".zip .tar .gz .bz2 .xz .7z .rar .pdf .doc .docx .xls .xlsx .ppt .pptx .exe .dll .so .dylib .o .a .pyc "
    ".pyo .class .wasm .bin .ttf .otf .woff .woff2 .eot .db .sqlite .sqlite3".split()
)
IMAGE_EXTENSIONS = frozenset(".png .jpg .jpeg .gif .webp .bmp .ico".split())
# Syntax checks run after an edit; {file} is the shell-quoted path.
LINTERS = {
    ".py": "{python} -c "
    + shlex.quote(
        "import sys, traceback\n"
        "try:\n    compile(open(sys.argv[1], 'rb').read(), sys.argv[1], 'exec')\n"
        "except SyntaxError as e:\n    sys.stderr.write(''.join(traceback.format_exception_only(e))); sys.exit(1)"
    )
    + " {file} 2>&1",
    ".js": "node --check {file} 2>&1",
    ".ts": "npx tsc --noEmit {file} 2>&1",
    ".go": "go vet {file} 2>&1",
    ".rs": "rustfmt --check {file} 2>&1",
}
LINT_TIMEOUT = 30.0
BINARY_ERROR = "Binary file - cannot display as text. Use appropriate tools to handle this file type."
IMAGE_HINT = (
    "Image file detected. Automatically redirected to vision_analyze tool. "
    "Use vision_analyze with this file path to inspect the image contents."
)


def model_path(path: str) -> str:
    """``~`` and ``~/x`` name the workspace (HOME there); other paths pass through unchanged."""
    if path == "~":
        return "."
    if path.startswith("~/"):
        return path[2:] or "."
    return path


async def backend_call(fn: Callable[[], Awaitable[T]]) -> T:
    """A backend file operation; the usual failures come back as one-sentence ``OSError``s for the result."""
    try:
        return await fn()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, WorkspacePathError, PermissionError):
        raise
    except ValueError as exc:
        raise OSError(str(exc)) from None


def _failure(exc: BaseException, path: str) -> str:
    if isinstance(exc, FileNotFoundError):
        return f"File not found: {path}"
    if isinstance(exc, IsADirectoryError):
        return f"Is a directory: {path}"
    if isinstance(exc, NotADirectoryError):
        return f"Not a directory: a parent of {path} is a file"
    if isinstance(exc, PermissionError):
        return f"Access denied: {exc}"
    return str(exc) or type(exc).__name__


def looks_binary(path: str, data: bytes) -> bool:
    """hermes-agent's rule: a binary extension, or over 30% control characters in the first 1000."""
    if os.path.splitext(path)[1].lower() in BINARY_EXTENSIONS:
        return True
    sample = data[: BINARY_SAMPLE_CHARS * 4].decode("utf-8", errors="replace")[:BINARY_SAMPLE_CHARS]
    if not sample:
        return False
    control = sum(1 for c in sample if ord(c) < 32 and c not in "\n\r\t")
    return control / len(sample) > BINARY_CONTROL_FRACTION


def split_lines(text: str) -> list[str]:
    """The file's lines; a final newline ends the last line rather than starting an empty one."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def number_lines(lines: list[str], start: int) -> str:
    """``LINE_NUM|CONTENT`` with hermes-agent's widths and long-line cut."""
    out = []
    for number, line in enumerate(lines, start=start):
        if len(line) > MAX_LINE_LENGTH:
            line = line[:MAX_LINE_LENGTH] + "... [truncated]"
        out.append(f"{number:6d}|{line}")
    return "\n".join(out)


def read_result(**fields: Any) -> dict[str, Any]:
    """hermes-agent's ReadResult: every field in its order, None and [] left out."""
    base: dict[str, Any] = {
        "content": "",
        "total_lines": 0,
        "file_size": 0,
        "truncated": False,
        "hint": None,
        "is_binary": False,
        "is_image": False,
        "error": None,
        "similar_files": [],
    }
    base.update(fields)
    return {k: v for k, v in base.items() if v is not None and v != []}


def format_read(path: str, data: bytes, offset: int = 1, limit: int = DEFAULT_READ_LIMIT) -> dict[str, Any]:
    """The ``read_file`` result for a file's bytes (pure)."""
    offset = max(1, int(offset))
    limit = max(1, min(int(limit), MAX_LINES))
    if os.path.splitext(path)[1].lower() in IMAGE_EXTENSIONS:
        return read_result(is_image=True, is_binary=True, file_size=len(data), hint=IMAGE_HINT)
    if looks_binary(path, data):
        return read_result(is_binary=True, file_size=len(data), error=BINARY_ERROR)
    lines = split_lines(data.decode("utf-8", errors="replace"))
    end = offset + limit - 1
    shown = lines[offset - 1 : end]
    truncated = len(lines) > end
    hint = None
    if truncated:
        hint = f"Use offset={end + 1} to continue reading (showing {offset}-{end} of {len(lines)} lines)"
    elif offset > len(lines) and lines:
        hint = f"offset {offset} is past the end of the file ({len(lines)} lines)"
    return read_result(
        content=number_lines(shown, offset),
        total_lines=len(lines),
        file_size=len(data),
        truncated=truncated,
        hint=hint,
    )


def similar_names(path: str, names: list[str]) -> list[str]:
    """hermes-agent's suggestions: of the first 20 names in the folder, those sharing half the letters."""
    folder, target = posixpath.dirname(path) or ".", posixpath.basename(path).lower()
    out = []
    for name in sorted(names)[:20]:
        if len(set(target) & set(name.lower())) >= len(target) * 0.5:
            out.append(posixpath.join(folder, name))
    return out[:5]


async def folder_names(ctx: ToolCallContext, folder: str) -> list[str]:
    """Names (files and sub-folders) directly inside a workspace folder; [] when it cannot be listed."""
    try:
        files = await ctx.backend.list_files(ctx.task_id, folder or ".")
    except (OSError, ValueError):
        return []
    base = workspace_path(ctx, folder or ".")
    names = set()
    for rel in files:
        parts = posixpath.relpath(rel, base).split("/") if base != "." else rel.split("/")
        if parts and parts[0] not in ("", ".."):
            names.add(parts[0])
    return sorted(names)


async def read_file(
    ctx: ToolCallContext, path: str, offset: int = 1, limit: int = DEFAULT_READ_LIMIT
) -> dict[str, Any]:
    target = model_path(path)
    try:
        data = await backend_call(lambda: ctx.backend.read_file(ctx.task_id, target))
    except FileNotFoundError:
        similar = similar_names(path, await folder_names(ctx, posixpath.dirname(target)))
        return read_result(error=f"File not found: {path}", similar_files=similar)
    except OSError as exc:
        return read_result(error=_failure(exc, path))
    return format_read(path, data, offset, limit)


async def write_file(ctx: ToolCallContext, path: str, content: str | bytes) -> dict[str, Any]:
    target = model_path(path)
    data = content.encode("utf-8") if isinstance(content, str) else bytes(content)
    try:
        await backend_call(lambda: ctx.backend.write_file(ctx.task_id, target, data))
    except OSError as exc:
        return {"bytes_written": 0, "dirs_created": False, "error": f"Failed to write file: {_failure(exc, path)}"}
    return {"bytes_written": len(data), "dirs_created": bool(posixpath.dirname(target.rstrip("/")))}


async def check_lint(ctx: ToolCallContext, path: str) -> dict[str, Any]:
    """hermes-agent's post-edit syntax check: ``{"status": "ok"|"error", "output"}`` or ``skipped``."""
    ext = os.path.splitext(path)[1].lower()
    template = LINTERS.get(ext)
    if template is None:
        return {"status": "skipped", "message": f"No linter for {ext} files"}
    program = template.split()[0]
    if program == "{python}":
        program = await _first_command(ctx, ("python", "python3"))
        if program is None:
            return {"status": "skipped", "message": "python not available"}
    elif await _first_command(ctx, (program,)) is None:
        return {"status": "skipped", "message": f"{program} not available"}
    command = template.format(python=program, file=shlex.quote(model_path(path)))
    result = await ctx.backend.execute(ctx.task_id, command, LINT_TIMEOUT)
    return {"status": "ok" if result.exit_code == 0 else "error", "output": result.output.strip()}


async def _first_command(ctx: ToolCallContext, names: tuple[str, ...]) -> str | None:
    """The first of ``names`` on the sandbox's PATH (remembered for the rollout)."""
    cache: dict[str, bool] = ctx.state.setdefault("commands_available", {})
    for name in names:
        if name not in cache:
            probe = await ctx.backend.execute(ctx.task_id, f"command -v {shlex.quote(name)} >/dev/null 2>&1", 10)
            cache[name] = probe.exit_code == 0
        if cache[name]:
            return name
    return None


def unified_diff(old: str, new: str, path: str) -> str:
    return "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), fromfile=f"a/{path}", tofile=f"b/{path}"
        )
    )


def patch_result(**fields: Any) -> dict[str, Any]:
    """hermes-agent's PatchResult: ``success`` always, the rest only when set."""
    out: dict[str, Any] = {"success": fields.get("success", False)}
    for key in ("diff", "files_modified", "files_created", "files_deleted", "lint", "error"):
        if fields.get(key):
            out[key] = fields[key]
    return out


async def _read_text(ctx: ToolCallContext, path: str) -> str:
    data = await backend_call(lambda: ctx.backend.read_file(ctx.task_id, model_path(path)))
    return data.decode("utf-8", errors="surrogateescape")


async def _write_text(ctx: ToolCallContext, path: str, text: str) -> None:
    data = text.encode("utf-8", errors="surrogateescape")
    await backend_call(lambda: ctx.backend.write_file(ctx.task_id, model_path(path), data))


async def patch_replace(
    ctx: ToolCallContext, path: str, old_string: str, new_string: str, replace_all: bool = False
) -> dict[str, Any]:
    try:
        content = await _read_text(ctx, path)
    except OSError:
        return patch_result(error=f"Failed to read file: {path}")
    updated, count, error = fuzzy_find_and_replace(content, old_string, new_string, replace_all)
    if error:
        return patch_result(error=error)
    if count == 0:
        return patch_result(error=f"Could not find match for old_string in {path}")
    try:
        await _write_text(ctx, path, updated)
    except OSError as exc:
        return patch_result(error=f"Failed to write changes: {_failure(exc, path)}")
    return patch_result(
        success=True,
        diff=unified_diff(content, updated, path),
        files_modified=[path],
        lint=await check_lint(ctx, path),
    )


def workspace_path(ctx: ToolCallContext, path: str) -> str:
    """A model path as a workspace-relative one (``.`` for the root), confined lexically."""
    roots = getattr(ctx.backend, "visible_roots", None)
    visible = tuple(roots(ctx.task_id)) if callable(roots) else ()
    return str(workspace_relative(model_path(path), visible))


def _shell_path(ctx: ToolCallContext, path: str) -> str:
    """A shell-quoted, workspace-relative form of a model path for ``rm``/``mv``."""
    return shlex.quote("./" + workspace_path(ctx, path))


async def _v4a_operation(ctx: ToolCallContext, op: PatchOperation) -> tuple[str, str]:
    """Apply one operation; ``(diff, "")`` or ``("", error)``."""
    if op.kind == "add":
        content = op.added_content
        written = await write_file(ctx, op.path, content)
        if written.get("error"):
            return "", f"Failed to add {op.path}: {written['error']}"
        return f"--- /dev/null\n+++ b/{op.path}\n" + "\n".join(f"+{line}" for line in content.split("\n")), ""
    if op.kind == "delete":
        try:
            await _read_text(ctx, op.path)
        except FileNotFoundError:
            return f"# {op.path} already deleted or doesn't exist", ""
        except OSError as exc:
            return "", f"Failed to delete {op.path}: {_failure(exc, op.path)}"
        rm = await ctx.backend.execute(ctx.task_id, f"rm -f -- {_shell_path(ctx, op.path)}", 30)
        if rm.exit_code != 0:
            return "", f"Failed to delete {op.path}: {rm.output.strip()}"
        return f"--- a/{op.path}\n+++ /dev/null\n# File deleted", ""
    if op.kind == "move":
        assert op.new_path is not None
        mv = await ctx.backend.execute(
            ctx.task_id,
            f'mkdir -p -- "$(dirname -- {_shell_path(ctx, op.new_path)})" && '
            f"mv -- {_shell_path(ctx, op.path)} {_shell_path(ctx, op.new_path)}",
            30,
        )
        if mv.exit_code != 0:
            return "", f"Failed to move {op.path}: {mv.output.strip()}"
        return f"# Moved: {op.path} -> {op.new_path}", ""
    try:
        current = await _read_text(ctx, op.path)
    except OSError as exc:
        return "", f"Failed to update {op.path}: Cannot read file: {_failure(exc, op.path)}"
    updated, error = apply_hunks(current, op.hunks)
    if error:
        return "", f"Failed to update {op.path}: Could not apply hunk: {error}"
    target = op.new_path or op.path
    try:
        await _write_text(ctx, target, updated)
    except OSError as exc:
        return "", f"Failed to update {op.path}: {_failure(exc, target)}"
    if op.new_path and op.new_path != op.path:
        await ctx.backend.execute(ctx.task_id, f"rm -f -- {_shell_path(ctx, op.path)}", 30)
    return unified_diff(current, updated, target), ""


async def patch_v4a(ctx: ToolCallContext, patch: str) -> dict[str, Any]:
    operations, parse_error = parse_v4a_patch(patch)
    if parse_error:
        return patch_result(error=f"Failed to parse patch: {parse_error}")
    modified: list[str] = []
    created: list[str] = []
    deleted: list[str] = []
    diffs: list[str] = []
    errors: list[str] = []
    for op in operations:
        diff, error = await _v4a_operation(ctx, op)
        if error:
            errors.append(error)
            continue
        diffs.append(diff)
        if op.kind == "add":
            created.append(op.path)
        elif op.kind == "delete":
            deleted.append(op.path)
        elif op.kind == "move" or op.new_path:
            modified.append(f"{op.path} -> {op.new_path}")
        else:
            modified.append(op.path)
    lint = {}
    for path in [p.split(" -> ")[-1] for p in modified] + created:
        lint[path] = await check_lint(ctx, path)
    return patch_result(
        success=not errors,
        diff="\n".join(diffs),
        files_modified=modified,
        files_created=created,
        files_deleted=deleted,
        lint=lint,
        error="; ".join(errors),
    )


def display_path(root: str, rel_under_root: str) -> str:
    """A found file's path as grep/find print it for the search root the model gave (``./a.py``)."""
    return posixpath.join(root, rel_under_root) if rel_under_root else root


async def _search_files_under(ctx: ToolCallContext, path: str) -> tuple[list[tuple[str, str]], str | None]:
    """``[(workspace path, displayed path)]`` of the regular files under ``path`` (skipped folders left out)."""
    target = model_path(path)
    try:
        files = await backend_call(lambda: ctx.backend.list_files(ctx.task_id, target))
    except OSError as exc:
        return [], _failure(exc, path)
    try:
        base = workspace_path(ctx, path)
    except OSError as exc:
        return [], _failure(exc, path)
    out = []
    for rel in files:
        if any(part in SEARCH_SKIP_DIRS for part in rel.split("/")[:-1]):
            continue
        if base == ".":
            under = rel
        elif rel == base:
            under = ""  # the search root is this file
        else:
            under = posixpath.relpath(rel, base)
        out.append((rel, display_path(path, under)))
    return out, None


def _glob_matches(glob: str, shown: str) -> bool:
    return fnmatch.fnmatchcase(shown if "/" in glob else posixpath.basename(shown), glob)


def _compile(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ToolArgumentError(f"search_files: invalid regular expression {pattern!r}: {exc}") from None


async def search_content(
    ctx: ToolCallContext,
    pattern: str,
    path: str = ".",
    file_glob: str | None = None,
    limit: int = 50,
    offset: int = 0,
    output_mode: str = "content",
    context: int = 0,
) -> dict[str, Any]:
    regex = _compile(pattern)
    files, error = await _search_files_under(ctx, path)
    if error:
        return {"total_count": 0, "error": error}
    matches: list[dict[str, Any]] = []
    counts: dict[str, int] = {}
    for rel, shown in files:
        if file_glob and not _glob_matches(file_glob, shown):
            continue
        try:
            data = await ctx.backend.read_file(ctx.task_id, rel)
        except (OSError, ValueError):
            continue
        if len(data) > SEARCH_MAX_FILE_BYTES or looks_binary(rel, data):
            continue
        lines = data.decode("utf-8", errors="replace").splitlines()
        hits = [i for i, line in enumerate(lines) if regex.search(line)]
        if not hits:
            continue
        counts[shown] = len(hits)
        if output_mode != "content":
            continue
        wanted: set[int] = set()
        for i in hits:
            wanted.update(range(max(0, i - context), min(len(lines), i + context + 1)))
        for i in sorted(wanted):
            matches.append({"path": shown, "line": i + 1, "content": lines[i][:MATCH_CONTENT_CHARS]})
    if output_mode == "files_only":
        names = list(counts)
        return {"total_count": len(names), **({"files": names[offset : offset + limit]} if names else {})}
    if output_mode == "count":
        return {"total_count": sum(counts.values()), **({"counts": counts} if counts else {})}
    page = matches[offset : offset + limit]
    out: dict[str, Any] = {"total_count": len(matches)}
    if page:
        out["matches"] = page
    if len(matches) > offset + limit:
        out["truncated"] = True
    return out


async def search_names(ctx: ToolCallContext, pattern: str, path: str = ".", limit: int = 50, offset: int = 0) -> dict:
    name_glob = pattern.split("/")[-1] if (pattern.startswith("**/") or "/" in pattern) else pattern
    files, error = await _search_files_under(ctx, path)
    if error:
        return {"total_count": 0, "error": error}
    found = [shown for _, shown in files if fnmatch.fnmatchcase(posixpath.basename(shown), name_glob)]
    page = found[offset : offset + limit]
    return {"total_count": len(page), **({"files": page} if page else {})}


class ReadFileTool(Tool):
    name = "read_file"
    toolset = "file"
    description = (
        "Read a text file with line numbers and pagination. Use this instead of cat/head/tail in terminal. "
        "Output format: 'LINE_NUM|CONTENT'. Suggests similar filenames if not found. Use offset and limit for "
        "large files. NOTE: Cannot read images or binary files — use vision_analyze for images."
    )
    parameters = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Path to the file to read (absolute, relative, or ~/path)"},
            "offset": {
                "type": "integer",
                "description": "Line number to start reading from (1-indexed, default: 1)",
                "default": 1,
                "minimum": 1,
            },
            "limit": {
                "type": "integer",
                "description": "Maximum number of lines to read (default: 500, max: 2000)",
                "default": 500,
                "maximum": 2000,
            },
        },
        "required": ["path"],
    }
    parallel_safe = True
    check_bounds = False

    async def call(self, args: dict[str, Any], ctx: ToolCallContext) -> dict[str, Any]:
        return await read_file(ctx, args["path"], args.get("offset", 1), args.get("limit", DEFAULT_READ_LIMIT))


class WriteFileTool(Tool):
    name = "write_file"
    toolset = "file"
    description = (
        "Write content to a file, completely replacing existing content. Use this instead of echo/cat heredoc in "
        "terminal. Creates parent directories automatically. OVERWRITES the entire file — use 'patch' for "
        "targeted edits."
    )
    parameters = {
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "description": "Path to the file to write (will be created if it doesn't exist, overwritten if it "
                "does)",
            },
            "content": {"type": "string", "description": "Complete content to write to the file"},
        },
        "required": ["path", "content"],
    }
    check_bounds = False

    async def call(self, args: dict[str, Any], ctx: ToolCallContext) -> dict[str, Any]:
        return await write_file(ctx, args["path"], args["content"])


class PatchTool(Tool):
    name = "patch"
    toolset = "file"
    description = (
        "Targeted find-and-replace edits in files. Use this instead of sed/awk in terminal. Uses fuzzy matching "
        "(9 strategies) so minor whitespace/indentation differences won't break it. Returns a unified diff. "
        "Auto-runs syntax checks after editing.\n\nReplace mode (default): find a unique string and replace it.\n"
        "Patch mode: apply V4A multi-file patches for bulk changes."
    )
    parameters = {
        "type": "object",
        "properties": {
            "mode": {
                "type": "string",
                "enum": ["replace", "patch"],
                "description": "Edit mode: 'replace' for targeted find-and-replace, 'patch' for V4A multi-file patches",
                "default": "replace",
            },
            "path": {"type": "string", "description": "File path to edit (required for 'replace' mode)"},
            "old_string": {
                "type": "string",
                "description": "Text to find in the file (required for 'replace' mode). Must be unique in the file "
                "unless replace_all=true. Include enough surrounding context to ensure uniqueness.",
            },
            "new_string": {
                "type": "string",
                "description": "Replacement text (required for 'replace' mode). Can be empty string to delete the "
                "matched text.",
            },
            "replace_all": {
                "type": "boolean",
                "description": "Replace all occurrences instead of requiring a unique match (default: false)",
                "default": False,
            },
            "patch": {
                "type": "string",
                "description": "V4A format patch content (required for 'patch' mode). Format:\n*** Begin Patch\n"
                "*** Update File: path/to/file\n@@ context hint @@\n context line\n-removed line\n+added line\n"
                "*** End Patch",
            },
        },
        "required": ["mode"],
    }
    check_bounds = False

    def validate(self, args: Any) -> dict[str, Any]:
        # hermes-agent's handler defaults a missing mode to "replace" although its schema requires it.
        if isinstance(args, dict) and "mode" not in args:
            args = {"mode": "replace", **args}
        return super().validate(args)

    async def call(self, args: dict[str, Any], ctx: ToolCallContext) -> dict[str, Any]:
        if args["mode"] == "patch":
            if not args.get("patch"):
                return {"error": "patch content required"}
            return await patch_v4a(ctx, args["patch"])
        if not args.get("path"):
            return {"error": "path required"}
        if args.get("old_string") is None or args.get("new_string") is None:
            return {"error": "old_string and new_string required"}
        return await patch_replace(
            ctx, args["path"], args["old_string"], args["new_string"], args.get("replace_all", False)
        )


class SearchFilesTool(Tool):
    name = "search_files"
    toolset = "file"
    description = (
        "Search file contents or find files by name. Use this instead of grep/rg/find/ls in terminal. "
        "Ripgrep-backed, faster than shell equivalents.\n\nContent search (target='content'): Regex search inside "
        "files. Output modes: full matches with line numbers, file paths only, or match counts.\n\nFile search "
        "(target='files'): Find files by glob pattern (e.g., '*.py', '*config*'). Also use this instead of ls — "
        "results sorted by modification time."
    )
    parameters = {
        "type": "object",
        "properties": {
            "pattern": {
                "type": "string",
                "description": "Regex pattern for content search, or glob pattern (e.g., '*.py') for file search",
            },
            "target": {
                "type": "string",
                "enum": ["content", "files"],
                "description": "'content' searches inside file contents, 'files' searches for files by name",
                "default": "content",
            },
            "path": {
                "type": "string",
                "description": "Directory or file to search in (default: current working directory)",
                "default": ".",
            },
            "file_glob": {
                "type": "string",
                "description": "Filter files by pattern in grep mode (e.g., '*.py' to only search Python files)",
            },
            "limit": {
                "type": "integer",
                "description": "Maximum number of results to return (default: 50)",
                "default": 50,
            },
            "offset": {
                "type": "integer",
                "description": "Skip first N results for pagination (default: 0)",
                "default": 0,
            },
            "output_mode": {
                "type": "string",
                "enum": ["content", "files_only", "count"],
                "description": "Output format for grep mode: 'content' shows matching lines with line numbers, "
                "'files_only' lists file paths, 'count' shows match counts per file",
                "default": "content",
            },
            "context": {
                "type": "integer",
                "description": "Number of context lines before and after each match (grep mode only)",
                "default": 0,
            },
        },
        "required": ["pattern"],
    }
    parallel_safe = True
    check_bounds = False

    def validate(self, args: Any) -> dict[str, Any]:
        # hermes-agent maps the older target names grep/find onto content/files.
        if isinstance(args, dict) and args.get("target") in ("grep", "find"):
            args = {**args, "target": {"grep": "content", "find": "files"}[args["target"]]}
        return super().validate(args)

    async def call(self, args: dict[str, Any], ctx: ToolCallContext) -> dict[str, Any]:
        limit = max(0, args.get("limit", 50))
        offset = max(0, args.get("offset", 0))
        path = args.get("path") or "."
        if args.get("target", "content") == "files":
            return await search_names(ctx, args["pattern"], path, limit, offset)
        return await search_content(
            ctx,
            args["pattern"],
            path,
            args.get("file_glob"),
            limit,
            offset,
            args.get("output_mode", "content"),
            max(0, args.get("context", 0)),
        )
