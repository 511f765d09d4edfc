"""The stateful terminal toolset ``terminal_stateful`` of hermes-agent's atropos/ integration: ``terminal_stateful``
and ``tmux``.

Both run in the slot pool's per-slot shells (``terminal_backend: sandbox``): ``terminal_stateful``
is the slot's long-lived bash (``cd``, variables and background processes persist across calls),
``tmux`` drives the slot's tmux session for TUI-style work. The schemas are that integration's
(``atropos/tools/terminal_stateful_tool.py``, ``tmux_tool.py``); answers have the terminal's shape
``{"output", "exit_code", "error"}``. Its tmux actions map onto the sandbox's: ``start``
and ``stop`` restart the session (a stopped session is started again by the next call),
``send_keys`` types the keys (a list whose last element is ``Enter`` presses it; ``C-c`` alone
interrupts), ``stream`` and ``capture`` return the screen; ``pane_width``/``pane_height``,
``capture_entire``, ``max_bytes`` and ``reset`` have no effect, and ``block`` waits ``max_wait_s``.
"""

from __future__ import annotations

from typing import Any

from hermes_env.errors import BackendFailure
from hermes_env.tools.registry import Tool, ToolCallContext

NEEDS_POOL = "{name} runs in the slot pool's stateful shells; set --env.terminal_backend sandbox (AgentEnv always does)"


# Failures of the pool itself (not of the command): the rollout fails, as for any tool.
_BACKEND_FAILURES = frozenset({"worker_lost", "no_slot", "sandbox_unavailable"})


def _answer(result: Any) -> dict[str, Any]:
    if result.error and result.error_type in _BACKEND_FAILURES:
        raise BackendFailure(result.error)
    error = result.error if result.error else None
    return {"output": result.output.rstrip("\n"), "exit_code": result.exit_code, "error": error}


class _PoolTool(Tool):
    toolset = "terminal_stateful"
    check_bounds = False
    #: Runs only on the slot pool (terminal_backend: sandbox); the configuration checks this.
    needs_slot_pool = True

    def _pool(self, ctx: ToolCallContext) -> Any:
        call = getattr(ctx.backend, "call_tool", None)
        return call if callable(call) else None


class TerminalStatefulTool(_PoolTool):
    name = "terminal_stateful"
    description = (
        "Execute a command in the sandbox, allowing stateful/background processes to persist "
        "across tool calls within the same trajectory slot (e.g. tmux sessions). "
        "Use sparingly; output is still non-interactive."
    )
    parameters = {
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The command to execute"},
            "timeout": {"type": "integer", "description": "Command timeout in seconds (optional).", "minimum": 1},
        },
        "required": ["command"],
    }

    async def call(self, args: dict[str, Any], ctx: ToolCallContext) -> dict[str, Any]:
        call = self._pool(ctx)
        if call is None:
            return {"output": "", "exit_code": -1, "error": NEEDS_POOL.format(name=self.name)}
        timeout = ctx.clamp_timeout(args.get("timeout"))
        return _answer(await call(ctx.task_id, "bash_stateful", {"command": args["command"]}, timeout))


TMUX_ACTIONS = ["start", "send_keys", "stream", "stop", "capture"]


class TmuxTool(_PoolTool):
    name = "tmux"
    description = (
        "Control a per-trajectory tmux session inside the sandbox (stateful terminal). "
        "Use this for TUI-style interactions: send keys and capture the current screen."
    )
    parameters = {
        "type": "object",
        "properties": {
            "action": {
                "type": "string",
                "description": "Action to perform: start | send_keys | stream | stop.",
                "enum": TMUX_ACTIONS,
            },
            "keys": {"description": "Keys to send (string or list of strings) when action=send_keys."},
            "block": {
                "type": "boolean",
                "description": "If true, wait for shell command completion (only valid at a shell prompt).",
                "default": False,
            },
            "min_wait_s": {
                "type": "number",
                "description": "For non-blocking send_keys, sleep this long after sending keys (seconds).",
                "default": 0.0,
            },
            "max_wait_s": {
                "type": "number",
                "description": "For blocking send_keys, max time to wait for completion (seconds).",
            },
            "capture_entire": {
                "type": "boolean",
                "description": "Deprecated. Streaming is preferred.",
                "default": False,
            },
            "max_bytes": {"type": "integer", "description": "Max bytes to return per stream call."},
            "reset": {
                "type": "boolean",
                "description": "If true, reset stream offset to the beginning of the asciinema recording.",
                "default": False,
            },
            "pane_width": {"type": "integer", "description": "Pane width for action=start (columns).", "minimum": 20},
            "pane_height": {"type": "integer", "description": "Pane height for action=start (rows).", "minimum": 10},
        },
        "required": ["action"],
    }

    def sandbox_args(self, args: dict[str, Any]) -> dict[str, Any] | str:
        """The sandbox tmux call for the upstream tmux tool's arguments, or why there is none."""
        action = args["action"]
        if action in ("start", "stop"):
            return {"action": "restart", "wait_ms": 100}
        if action in ("stream", "capture"):
            return {"action": "capture"}
        keys = args.get("keys")
        wait_s = float(args.get("max_wait_s") or 1.0) if args.get("block") else float(args.get("min_wait_s") or 0.3)
        wait_ms = int(wait_s * 1000)
        if isinstance(keys, list) and keys == ["C-c"]:
            return {"action": "interrupt", "wait_ms": wait_ms}
        if isinstance(keys, list) and all(isinstance(k, str) for k in keys):
            enter = bool(keys) and keys[-1] == "Enter"
            text = "".join(keys[:-1] if enter else keys)
            return {"action": "send", "keys": text, "enter": enter, "wait_ms": wait_ms}
        if isinstance(keys, str):
            return {"action": "send", "keys": keys, "enter": False, "wait_ms": wait_ms}
        return "send_keys needs 'keys': a string, or a list of strings ending in 'Enter' to press it"

    async def call(self, args: dict[str, Any], ctx: ToolCallContext) -> dict[str, Any]:
        call = self._pool(ctx)
        if call is None:
            return {"output": "", "exit_code": -1, "error": NEEDS_POOL.format(name=self.name)}
        sandbox = self.sandbox_args(args)
        if isinstance(sandbox, str):
            return {"output": "", "exit_code": -1, "error": sandbox}
        return _answer(await call(ctx.task_id, "tmux", sandbox, ctx.clamp_timeout(None)))
