"""``execute_code``: hermes-agent's programmatic tool calling, run inside the rollout's sandbox.

The model's Python script runs in the workspace (``python3``, as a background job of the rollout)
with a generated ``hermes_tools`` module whose functions (hermes-agent's stubs: ``terminal``,
``read_file``, ``write_file``, ``search_files``, ``patch``, ``web_search``, ``web_extract``) send
each call to this process through request/response files in the job's folder; this process runs
the call with the real tool (the same code the model's own calls use) and writes the answer back.
hermes-agent does the same over a Unix socket with the script on the host; here nothing of the
script runs outside the sandbox. Limits are hermes-agent's: 50 tool calls per script, 50 KB of
stdout, 10 KB of stderr; the time limit is the tool-call limit (``terminal_timeout``; hermes-agent:
300 s). The answer is hermes-agent's: ``{"status": "success"|"error"|"timeout", "output",
"tool_calls_made", "duration_seconds"}`` plus ``error`` when it failed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shlex
import time
from typing import Any

from hermes_env.errors import ToolCallError
from hermes_env.tools.process_tool import BG_DIR, ProcessRegistry
from hermes_env.tools.registry import REGISTRY, Tool, ToolCallContext, error_json
from hermes_env.tools.toolsets import UNAVAILABLE_TOOLS

SANDBOX_ALLOWED_TOOLS = frozenset(
    {"web_search", "web_extract", "read_file", "write_file", "search_files", "patch", "terminal"}
)
MAX_TOOL_CALLS = 50
MAX_STDOUT_BYTES = 50_000
MAX_STDERR_BYTES = 10_000
POLL_SECONDS = 0.05
# Terminal parameters a script may not use (hermes-agent's _TERMINAL_BLOCKED_PARAMS).
TERMINAL_BLOCKED_PARAMS = ("background", "check_interval", "pty")

# hermes-agent's stubs: (signature, docstring, arguments sent).
_STUBS = {
    "web_search": ("query: str, limit: int = 5", "Search the web.", '{"query": query, "limit": limit}'),
    "web_extract": ("urls: list", "Extract content from URLs.", '{"urls": urls}'),
    "read_file": (
        "path: str, offset: int = 1, limit: int = 500",
        'Read a file (1-indexed lines). Returns dict with "content" and "total_lines".',
        '{"path": path, "offset": offset, "limit": limit}',
    ),
    "write_file": (
        "path: str, content: str",
        "Write content to a file (always overwrites). Returns dict with status.",
        '{"path": path, "content": content}',
    ),
    "search_files": (
        'pattern: str, target: str = "content", path: str = ".", file_glob: str = None, limit: int = 50',
        'Search file contents (target="content") or find files by name (target="files").',
        '{"pattern": pattern, "target": target, "path": path, "file_glob": file_glob, "limit": limit}',
    ),
    "patch": (
        "path: str, old_string: str, new_string: str, replace_all: bool = False",
        "Replace old_string with new_string in a file. Returns dict with status.",
        '{"path": path, "old_string": old_string, "new_string": new_string, "replace_all": replace_all}',
    ),
    "terminal": (
        "command: str, timeout: int = None, workdir: str = None",
        'Run a shell command (foreground only). Returns dict with "output" and "exit_code".',
        '{"command": command, "timeout": timeout, "workdir": workdir}',
    ),
}

_STUB_HEADER = '''"""hermes_tools: tool calls from an execute_code script (answered by the environment)."""
import json, os, time

_DIR = os.environ["HERMES_RPC_DIR"]
_count = 0


def _call(tool, args):
    global _count
    _count += 1
    args = {k: v for k, v in args.items() if v is not None}
    req, resp = os.path.join(_DIR, "req_%06d.json" % _count), os.path.join(_DIR, "resp_%06d.json" % _count)
    with open(req + ".tmp", "w") as f:
        json.dump({"tool": tool, "args": args}, f)
    os.rename(req + ".tmp", req)
    while not os.path.exists(resp):
        time.sleep(0.01)
    with open(resp) as f:
        raw = f.read()
    try:
        result = json.loads(raw)
    except ValueError:
        return raw
    if isinstance(result, str):
        try:
            return json.loads(result)
        except ValueError:
            return result
    return result

'''


def stub_module(tools: list[str]) -> str:
    """The ``hermes_tools`` source for the allowed tools."""
    parts = [_STUB_HEADER]
    for name in sorted(tools):
        signature, doc, args = _STUBS[name]
        parts.append(f'\ndef {name}({signature}):\n    """{doc}"""\n    return _call({name!r}, {args})\n')
    return "".join(parts)


class ExecuteCodeTool(Tool):
    name = "execute_code"
    toolset = "code_execution"
    description = (
        "Run a Python script that can call Hermes tools programmatically. "
        "Use this when you need 3+ tool calls with processing logic between them, "
        "need to filter/reduce large tool outputs before they enter your context, "
        "need conditional branching (if X then Y else Z), or need to loop "
        "(fetch N pages, process N files, retry on failure).\n\n"
        "Use normal tool calls instead when: single tool call with no processing, "
        "you need to see the full result and apply complex reasoning, "
        "or the task requires interactive user input.\n\n"
        "Available via `from hermes_tools import ...`:\n\n"
        "  web_search(query: str, limit: int = 5) -> dict\n"
        '    Returns {"data": {"web": [{"url", "title", "description"}, ...]}}\n'
        "  web_extract(urls: list[str]) -> dict\n"
        '    Returns {"results": [{"url", "content", "error"}, ...]} where content is markdown\n'
        "  read_file(path: str, offset: int = 1, limit: int = 500) -> dict\n"
        '    Lines are 1-indexed. Returns {"content": "...", "total_lines": N}\n'
        "  write_file(path: str, content: str) -> dict\n"
        "    Always overwrites the entire file.\n"
        '  search_files(pattern: str, target="content", path=".", file_glob=None, limit=50) -> dict\n'
        '    target: "content" (search inside files) or "files" (find files by name). Returns {"matches": [...]}\n'
        "  patch(path: str, old_string: str, new_string: str, replace_all: bool = False) -> dict\n"
        "    Replaces old_string with new_string in the file.\n"
        "  terminal(command: str, timeout=None, workdir=None) -> dict\n"
        '    Foreground only (no background/pty). Returns {"output": "...", "exit_code": N}\n\n'
        "Limits: 5-minute timeout, 50KB stdout cap, max 50 tool calls per script. "
        "terminal() is foreground-only (no background or pty).\n\n"
        "Print your final result to stdout. Use Python stdlib (json, re, math, csv, "
        "datetime, collections, etc.) for processing between tool calls."
    )
    parameters = {
        "type": "object",
        "properties": {
            "code": {
                "type": "string",
                "description": (
                    "Python code to execute. Import tools with "
                    "`from hermes_tools import web_search, terminal, ...` "
                    "and print your final result to stdout."
                ),
            },
        },
        "required": ["code"],
    }
    check_bounds = False

    async def call(self, args: dict[str, Any], ctx: ToolCallContext) -> dict[str, Any]:
        code = args["code"]
        if not code.strip():
            return {"error": "No code provided."}
        started = time.monotonic()
        offered = SANDBOX_ALLOWED_TOOLS & set(ctx.enabled_tools)
        allowed = sorted(offered or SANDBOX_ALLOWED_TOOLS)
        registry = ProcessRegistry.of(ctx)
        job_dir = f"{BG_DIR}/exec_{int(time.time() * 1000)}_{len(registry.jobs)}"
        await ctx.backend.write_file(ctx.task_id, f"{job_dir}/hermes_tools.py", stub_module(allowed).encode())
        await ctx.backend.write_file(ctx.task_id, f"{job_dir}/script.py", code.encode())
        quoted = shlex.quote(job_dir)
        command = (
            f'export HERMES_RPC_DIR="$PWD/{job_dir}" PYTHONPATH="$PWD/{job_dir}" PYTHONDONTWRITEBYTECODE=1; '
            f"exec python3 -u {quoted}/script.py 2>{quoted}/stderr"
        )
        job = await registry.spawn(ctx, command, hidden=True)
        served: set[str] = set()
        calls = 0
        limit = float(ctx.max_timeout or ctx.timeout)
        status = "success"
        try:
            while True:
                calls = await self._serve(ctx, REGISTRY, job_dir, allowed, served, calls)
                await registry.refresh(ctx, job)
                if job.exited:
                    calls = await self._serve(ctx, REGISTRY, job_dir, allowed, served, calls)
                    break
                if time.monotonic() - started > limit:
                    status = "timeout"
                    await registry.kill(ctx, job.id)
                    break
                await asyncio.sleep(POLL_SECONDS)
            stdout = (await registry.output(ctx, job)).encode()
            stderr = await _read(ctx, f"{job_dir}/stderr")
        finally:
            if not job.exited:
                await registry.kill(ctx, job.id)
            with contextlib.suppress(Exception):
                job_files = shlex.quote(f"{BG_DIR}/{job.id}")
                await ctx.backend.execute(ctx.task_id, f"rm -rf -- {quoted} {job_files}.*", 30)
        out = stdout[:MAX_STDOUT_BYTES].decode("utf-8", errors="replace")
        if len(stdout) > MAX_STDOUT_BYTES:
            out += "\n[output truncated at 50KB]"
        err = stderr[:MAX_STDERR_BYTES].decode("utf-8", errors="replace")
        result: dict[str, Any] = {
            "status": status,
            "output": out,
            "tool_calls_made": calls,
            "duration_seconds": round(time.monotonic() - started, 2),
        }
        if status == "timeout":
            result["error"] = f"Script timed out after {limit:g}s and was killed."
        elif job.exit_code != 0:
            result["status"] = "error"
            result["error"] = err or f"Script exited with code {job.exit_code}"
            if err:
                result["output"] = out + "\n--- stderr ---\n" + err
        return result

    async def _serve(
        self, ctx: ToolCallContext, registry: Any, job_dir: str, allowed: list[str], served: set[str], calls: int
    ) -> int:
        """Answer the script's pending requests; the number of tool calls made so far."""
        try:
            names = await ctx.backend.list_files(ctx.task_id, job_dir)
        except (OSError, ValueError):
            return calls
        for path in sorted(n for n in names if n.rsplit("/", 1)[-1].startswith("req_") and n.endswith(".json")):
            if path in served:
                continue
            served.add(path)
            answer, counted = await self._answer(ctx, registry, path, allowed, calls)
            calls += counted
            reply = path.replace("/req_", "/resp_")
            await ctx.backend.write_file(ctx.task_id, reply + ".tmp", answer.encode())
            await ctx.backend.execute(ctx.task_id, f"mv -- {shlex.quote(reply + '.tmp')} {shlex.quote(reply)}", 10)
        return calls

    async def _answer(
        self, ctx: ToolCallContext, registry: Any, path: str, allowed: list[str], calls: int
    ) -> tuple[str, bool]:
        """The answer to one request, and whether it counts as a tool call (refused ones do not)."""
        try:
            request = json.loads(await _read(ctx, path))
            tool_name, tool_args = str(request.get("tool", "")), dict(request.get("args") or {})
        except (ValueError, TypeError, AttributeError) as exc:
            return error_json(f"Invalid RPC request: {exc}"), False
        if tool_name not in allowed:
            available = ", ".join(allowed)
            return error_json(f"Tool '{tool_name}' is not available in execute_code. Available: {available}"), False
        if calls >= MAX_TOOL_CALLS:
            limit = f"Tool call limit reached ({MAX_TOOL_CALLS}). No more tool calls allowed in this execution."
            return error_json(limit), False
        if tool_name == "terminal":
            for param in TERMINAL_BLOCKED_PARAMS:
                tool_args.pop(param, None)
        if tool_name not in registry and tool_name in UNAVAILABLE_TOOLS:
            return error_json(f"{tool_name} is not available here: {UNAVAILABLE_TOOLS[tool_name]}"), True
        try:
            return str(await registry.dispatch(tool_name, tool_args, ctx)), True
        except ToolCallError as exc:
            return error_json(str(exc)), True


async def _read(ctx: ToolCallContext, path: str) -> bytes:
    try:
        return await ctx.backend.read_file(ctx.task_id, path)
    except (OSError, ValueError):
        return b""
