"""ToolContext: a reward function's access to the rollout's own workspace, with hermes-agent's API.

``compute_reward(item, result, ctx)`` gets one of these bound to the rollout's ``task_id`` and
backend, so it can run the hidden tests, read what the model wrote or upload fixtures, inside the
same sandbox the rollout used. hermes-agent's reward code runs unchanged:

    def compute_reward(self, item, result, ctx):          # or async def, with or without await
        test = ctx.terminal("pytest -q")
        if test["exit_code"] == 0:
            return 1.0
        return 0.5 if ctx.read_file("solution.py").get("content") else 0.0

Every method can be awaited or called directly (see :mod:`hermes_env.sync_bridge`: awaited, it
runs on the caller's loop; called directly, it blocks the caller while a helper loop runs it).
Results are hermes-agent's dicts (``r["exit_code"]``, ``r["output"]``) that also read as objects
(``r.exit_code``, ``r.ok``). hermes_env's extras: ``read_text``, ``read_bytes``, ``list_files``,
``exists``, ``async with``, and calling the context with a ``ToolCall`` (AgentEnv's ``exec_tool``).

A backend that fails under a call (a sandbox worker died) raises :class:`BackendFailure` from that
call, and the context keeps the first one in ``backend_failure``: the rollout then fails (its group
is dropped with cause ``sandbox_failed``) even if the reward caught the exception and returned a
score, since a score computed against a dead sandbox says nothing about the model.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import posixpath
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import Any, Concatenate, ParamSpec, TypeVar

from hermes_env.agent.steps import TOOL_ALIASES, ToolResult, tool_result_from_text
from hermes_env.backends.base import ExecResult, ExecutionBackend
from hermes_env.errors import BackendFailure, ToolCallError
from hermes_env.sync_bridge import AwaitableResult, awaitable_or_sync
from hermes_env.tools import REGISTRY, ToolCallContext, ToolOutput, ToolRegistry, file_tools
from hermes_env.tools.process_tool import kill_all_processes
from hermes_env.tools.registry import error_json
from hermes_env.tools.terminal_tool import terminal_answer, with_workdir


class ResultDict(AwaitableResult, dict[str, Any]):
    """A hermes-agent result dict whose keys also read as attributes (``r.content`` is ``r["content"]``)."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"result has no field {name!r}; fields: {', '.join(self)}") from None


class CommandResult(ResultDict):
    """``{"output", "exit_code", "error"}`` as hermes-agent's terminal answers, plus ``ok``, ``timed_out``
    and ``truncated`` as attributes."""

    timed_out: bool = False
    truncated: bool = False

    @property
    def ok(self) -> bool:
        return self["exit_code"] == 0 and self["error"] is None and not self.timed_out


class ResultList(AwaitableResult, list[Any]):
    """A list of results (``upload_dir``, ``download_dir``)."""


class ToolText(AwaitableResult, ToolOutput):
    """``call_tool``'s raw JSON text (a str), with the tool's failure in ``error``."""


def _json_dict(text: str) -> ResultDict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return ResultDict(error=text)
    return ResultDict(value) if isinstance(value, dict) else ResultDict(result=value)


P = ParamSpec("P")
T = TypeVar("T")


def _notes_backend_failure(
    method: Callable[Concatenate[ToolContext, P], Awaitable[T]],
) -> Callable[Concatenate[ToolContext, P], Coroutine[Any, Any, T]]:
    """Keep the first BackendFailure a call raised on the context (see the module doc), then re-raise it."""

    @functools.wraps(method)
    async def call(self: ToolContext, *args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return await method(self, *args, **kwargs)
        except BackendFailure as exc:
            if self.backend_failure is None:
                self.backend_failure = exc
            raise

    return call


class ToolContext:
    """Tool access to one task's workspace; safe to share between coroutines of that task."""

    def __init__(
        self,
        task_id: str,
        backend: ExecutionBackend,
        *,
        registry: ToolRegistry = REGISTRY,
        timeout: float = 120.0,
        max_timeout: float | None = None,
        state: dict[str, Any] | None = None,
        background_timeout: float = 3600.0,
    ) -> None:
        if not task_id:
            raise ValueError("task_id must be a non-empty string")
        self.task_id = task_id
        self.backend = backend
        self.registry = registry
        self.timeout = timeout
        # What the model's tool calls run with; ``state`` holds the todo list and background jobs.
        self.run_context = ToolCallContext(
            task_id=task_id,
            backend=backend,
            timeout=timeout,
            max_timeout=max_timeout,
            state=state if state is not None else {},
            background_timeout=background_timeout,
        )
        self._closed = False
        self.backend_failure: BackendFailure | None = None  # the first one any call raised
        #: When a list, every ``terminal`` call appends (command, result) to it: the environment sets
        #: one while the reward runs, so a view can show why a rollout scored what it did.
        self.command_log: list[tuple[str, ExecResult]] | None = None
        #: When set, every ``terminal`` call's command goes through it first (the model's tool calls never do):
        #: a task whose verifier needs its own tools (hermes-agent compatibility's upstream Dockerfiles) sets one.
        self.command_wrapper: Callable[[ToolContext, str], Awaitable[str]] | None = None

    # -- commands --------------------------------------------------------------------------
    @awaitable_or_sync
    @_notes_backend_failure
    async def terminal(
        self, command: str, timeout: float | None = None, *, workdir: str | None = None, stdin: str | None = None
    ) -> CommandResult:
        """Run a shell command in the workspace: ``{"output", "exit_code", "error"}`` (+ ``.ok``)."""
        self._check_open()
        limit = float(timeout or self.timeout)
        run = with_workdir(command, workdir)
        if self.command_wrapper is not None:
            run = await self.command_wrapper(self, run)
        result = await self.backend.execute(self.task_id, run, limit, stdin=stdin)
        if self.command_log is not None:
            self.command_log.append((command, result))
        answer = CommandResult(terminal_answer(result, limit))
        answer.timed_out, answer.truncated = result.timed_out, result.truncated
        return answer

    @awaitable_or_sync
    @_notes_backend_failure
    async def call_tool(self, tool_name: str, arguments: dict[str, Any]) -> ToolText:
        """Run any registered tool as the model would; its raw result text (JSON for hermes-agent's tools)."""
        return await self._call_tool(tool_name, arguments)

    async def _call_tool(self, tool_name: str, arguments: dict[str, Any]) -> ToolText:
        self._check_open()
        tool = self.registry.find(tool_name)
        if tool is None:
            from hermes_env.tools.toolsets import UNAVAILABLE_TOOLS

            why = UNAVAILABLE_TOOLS.get(tool_name)
            message = f"{tool_name} is not available here: {why}" if why else f"Unknown tool: {tool_name}"
            return ToolText(error_json(message), message)
        try:
            output = await tool.run(arguments, self.run_context)
        except ToolCallError as exc:
            return ToolText(error_json(str(exc)), str(exc))
        return ToolText(str(output), getattr(output, "error", None))

    # -- files (hermes-agent's results) -------------------------------------------------------
    @awaitable_or_sync
    @_notes_backend_failure
    async def read_file(self, path: str, offset: int = 1, limit: int = file_tools.DEFAULT_READ_LIMIT) -> ResultDict:
        """hermes-agent's read_file result: ``content`` (numbered ``LINE|text``), ``total_lines``, ... or ``error``."""
        self._check_open()
        return ResultDict(await file_tools.read_file(self.run_context, path, offset, limit))

    @awaitable_or_sync
    @_notes_backend_failure
    async def write_file(self, path: str, content: str | bytes) -> ResultDict:
        """Create or replace a file (str as UTF-8, bytes as is): ``{"bytes_written", "dirs_created"}``."""
        self._check_open()
        return ResultDict(await file_tools.write_file(self.run_context, path, content))

    @awaitable_or_sync
    @_notes_backend_failure
    async def search(self, query: str, path: str = ".", *, limit: int = 50) -> ResultDict:
        """hermes-agent's search_files result for a regex: ``{"total_count", "matches": [{path, line, content}]}``."""
        self._check_open()
        try:
            return ResultDict(await file_tools.search_content(self.run_context, query, path, limit=limit))
        except ToolCallError as exc:  # an invalid regex: hermes-agent finds nothing; here it also says why
            return ResultDict(total_count=0, error=str(exc))

    @awaitable_or_sync
    @_notes_backend_failure
    async def upload_file(self, local_path: str | os.PathLike[str], remote_path: str) -> ResultDict:
        """Copy a host file into the workspace (binary safe): ``{"exit_code", "output"}``.

        ``remote_path`` may also be absolute outside the workspace (``/tests/x``) where the backend gives each
        task a root of its own: the container's path on ``docker``, the task's root directory on ``bwrap``.
        """
        return await self._upload_file(local_path, remote_path)

    async def _upload_file(self, local_path: str | os.PathLike[str], remote_path: str) -> ResultDict:
        self._check_open()
        local = Path(local_path)
        if not local.is_file():
            return ResultDict(exit_code=-1, output=f"Local file not found: {local_path}")
        data = await asyncio.to_thread(local.read_bytes)
        written = await file_tools.write_file(self.run_context, str(remote_path), data)
        if written.get("error"):
            return ResultDict(exit_code=-1, output=written["error"])
        return ResultDict(exit_code=0, output="")

    @awaitable_or_sync
    @_notes_backend_failure
    async def upload_dir(self, local_dir: str | os.PathLike[str], remote_dir: str = ".") -> ResultList:
        """Copy a host directory tree into the workspace: one ``upload_file`` result per file."""
        root = Path(local_dir)
        if not root.is_dir():
            return ResultList([ResultDict(exit_code=-1, output=f"Local directory not found: {local_dir}")])
        files = await asyncio.to_thread(_host_files, root)
        results = ResultList()
        for rel in files:
            target = str(PurePosixPath(remote_dir) / rel)
            results.append(await self._upload_file(root / rel, target))
        return results

    @awaitable_or_sync
    @_notes_backend_failure
    async def download_file(self, remote_path: str, local_path: str | os.PathLike[str]) -> ResultDict:
        """Copy a workspace file to the host (parents created): ``{"success", "bytes"}`` or ``{"success", "error"}``."""
        return await self._download_file(remote_path, local_path)

    async def _download_file(self, remote_path: str, local_path: str | os.PathLike[str]) -> ResultDict:
        self._check_open()
        try:
            data = await self.backend.read_file(self.task_id, file_tools.model_path(remote_path))
        except (OSError, ValueError) as exc:
            return ResultDict(success=False, error=f"Failed to read remote file: {remote_path}: {exc}")
        await asyncio.to_thread(_write_host_file, Path(local_path), data)
        return ResultDict(success=True, bytes=len(data))

    @awaitable_or_sync
    @_notes_backend_failure
    async def download_dir(self, remote_dir: str, local_dir: str | os.PathLike[str]) -> ResultList:
        """Copy a workspace directory tree to the host: one ``download_file`` result per file."""
        self._check_open()
        try:
            files = await self.backend.list_files(self.task_id, file_tools.model_path(remote_dir))
        except (OSError, ValueError):
            files = []
        if not files:
            return ResultList([ResultDict(success=False, error=f"Remote directory is empty or missing: {remote_dir}")])
        # Backends list absolute paths for a directory outside the workspace (/logs/verifier in the task's sandbox).
        absolute = files[0].startswith("/")
        base = posixpath.normpath(remote_dir) if absolute else file_tools.workspace_path(self.run_context, remote_dir)
        results = ResultList()
        for rel in files:
            sub = rel if base == "." else posixpath.relpath(rel, base)
            if sub.startswith(".."):
                sub = posixpath.basename(rel) if absolute else rel  # remote_dir named a file: keep its own name
            results.append(await self._download_file(rel, Path(local_dir) / sub))
        return results

    # -- hermes-agent's network tools: answered by the tool server when one serves them ---------
    @awaitable_or_sync
    @_notes_backend_failure
    async def web_search(self, query: str) -> ResultDict:
        return _json_dict(await self._call_tool("web_search", {"query": query}))

    @awaitable_or_sync
    @_notes_backend_failure
    async def web_extract(self, urls: list[str]) -> ResultDict:
        return _json_dict(await self._call_tool("web_extract", {"urls": urls}))

    @awaitable_or_sync
    @_notes_backend_failure
    async def browser_navigate(self, url: str) -> ResultDict:
        return _json_dict(await self._call_tool("browser_navigate", {"url": url}))

    @awaitable_or_sync
    @_notes_backend_failure
    async def browser_snapshot(self) -> ResultDict:
        return _json_dict(await self._call_tool("browser_snapshot", {}))

    # -- hermes_env's extras ------------------------------------------------------------------
    @awaitable_or_sync
    @_notes_backend_failure
    async def read_text(self, path: str, *, errors: str = "replace") -> str:
        """A workspace file decoded as UTF-8 (undecodable bytes replaced unless ``errors='strict'``)."""
        return (await self._read_bytes(path)).decode("utf-8", errors=errors)

    @awaitable_or_sync
    @_notes_backend_failure
    async def read_bytes(self, path: str) -> bytes:
        """A workspace file's bytes, unchanged (FileNotFoundError / PermissionError as usual)."""
        return await self._read_bytes(path)

    async def _read_bytes(self, path: str) -> bytes:
        self._check_open()
        return await self.backend.read_file(self.task_id, file_tools.model_path(path))

    @awaitable_or_sync
    @_notes_backend_failure
    async def list_files(self, path: str = ".") -> list[str]:
        """Workspace-relative paths of the regular files under ``path``, recursively, sorted."""
        return await self._list_files(path)

    async def _list_files(self, path: str) -> list[str]:
        self._check_open()
        return await self.backend.list_files(self.task_id, file_tools.model_path(path))

    @awaitable_or_sync
    @_notes_backend_failure
    async def exists(self, path: str) -> bool:
        """Whether ``path`` is a regular file (or a directory holding files) in the workspace."""
        try:
            return bool(await self._list_files(path))
        except (FileNotFoundError, NotADirectoryError):
            return False

    @_notes_backend_failure
    async def __call__(self, call: Any) -> Any:
        """AgentEnv's ``exec_tool``: run a ``ToolCall`` (``.name``, ``.arguments``), answer a ``ToolResult``."""
        return await run_tool_call(self, call)

    # -- lifecycle ---------------------------------------------------------------------------
    @awaitable_or_sync
    async def cleanup(self) -> None:
        """Stop the rollout's background processes and destroy its workspace (idempotent)."""
        if self._closed:
            return
        self._closed = True
        try:
            await kill_all_processes(self.run_context.state, self.run_context)
        finally:
            await self.backend.cleanup(self.task_id)

    async def __aenter__(self) -> ToolContext:
        await self.backend.start(self.task_id)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.cleanup()

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"ToolContext for task {self.task_id!r} was cleaned up; create a new one")


def _call_parts(call: Any) -> tuple[str, dict[str, Any], str | None]:
    if isinstance(call, dict):
        return str(call.get("name", "")), dict(call.get("arguments") or {}), call.get("uniq_id")
    return str(call.name), dict(call.arguments or {}), getattr(call, "uniq_id", None)


async def run_tool_call(ctx: ToolContext, call: Any) -> ToolResult:
    """Run ``call`` (a ToolCall or ``{"name", "arguments"}``) in the context's workspace (``exec_tool``'s work)."""
    name, args, uniq_id = _call_parts(call)
    name = TOOL_ALIASES.get(name, name)
    if name == "terminal":
        answer = await ctx.terminal(args.get("command", ""), args.get("timeout"), workdir=args.get("workdir"))
        success = answer.ok
        error = answer["error"] or ("" if success else f"Exit code: {answer['exit_code']}")
        metadata = {"exit_code": answer["exit_code"], "timeout": answer.timed_out}
        return ToolResult(success, answer["output"], error, metadata, uniq_id)
    text = await ctx.call_tool(name, args)
    error = str(getattr(text, "error", None) or "")
    result = tool_result_from_text(name, str(text), uniq_id)
    if error and result.success:  # an error carried on the text object, not in its JSON
        return ToolResult(False, result.output, error, result.metadata, uniq_id)
    return result


def _host_files(root: Path) -> list[str]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            full = Path(dirpath) / name
            if full.is_file():
                out.append(full.relative_to(root).as_posix())
    return out


def _write_host_file(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
