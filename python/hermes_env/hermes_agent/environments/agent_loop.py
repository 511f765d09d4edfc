"""hermes-agent's ``environments.agent_loop``: ``HermesAgentLoop`` with upstream's constructor, ``AgentResult``,
``ToolError``, ``resize_tool_pool`` and ``_tool_executor``.

``HermesAgentLoop(server=, tool_schemas=, valid_tool_names=, max_turns=, task_id=, temperature=, max_tokens=,
extra_body=)`` runs hermes_env's loop (:class:`hermes_env.agent.loop.HermesAgentLoop`) in the sandbox of
``task_id`` (:func:`~hermes_env.hermes_agent.tools.terminal_tool.task_context`: the environment's backend, the
task's image override). The tools are hermes_env's tools of the names in ``tool_schemas`` that are in
``valid_tool_names``. Given the environment's own ``self.server`` while the environment runs Phase 2
(``--openai.server_type vllm``), the loop goes through hermes_env's managed server, so tool calls are parsed and
tokens recorded as in the environment's own rollouts. Upstream's loop has no wall-clock budget: this one
has none either (the environment's ``rollout_timeout`` applies to its own rollouts only).
"""

from __future__ import annotations

import concurrent.futures
import logging
import uuid
from typing import Any

from hermes_env.agent.loop import AgentResult, ToolError
from hermes_env.agent.loop import HermesAgentLoop as _CoreLoop
from hermes_env.agent.tool_pool import ToolWorkerPool
from hermes_env.hermes_agent.tools import upstream_task_images
from hermes_env.hermes_agent.tools.terminal_tool import task_context
from hermes_env.tools import REGISTRY

logger = logging.getLogger(__name__)

#: Upstream's thread pool for tool calls. hermes_env's tools are coroutines run on :data:`_tool_pool` (a bounded
#: asyncio pool); this executor runs the synchronous ``model_tools.handle_function_call`` calls made from a
#: running event loop, and environment files may shut it down as upstream's TerminalBench2 does.
_tool_executor = concurrent.futures.ThreadPoolExecutor(max_workers=128, thread_name_prefix="hermes-tool")
_tool_pool = ToolWorkerPool(128)

#: Upstream has no wall-clock budget per loop; hermes_env's loop needs one: a day.
NO_BUDGET_SECONDS = 86_400.0
DEFAULT_TOOL_TIMEOUT = 120.0

_environment: Any = None  # the running HermesAgentBaseEnv (set by its __init__)


def resize_tool_pool(max_workers: int) -> None:
    """Tool calls in flight at once across all loops (upstream resizes its thread pool)."""
    global _tool_executor, _tool_pool
    if max_workers < 1:
        raise ValueError(f"tool pool size must be at least 1, got {max_workers}")
    _tool_executor = concurrent.futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="hermes-tool")
    _tool_pool = ToolWorkerPool(max_workers)


def use_environment(env: Any) -> None:
    """Called by the running environment: loops use its tool pool, time limits and Phase 2 server."""
    global _environment, _tool_pool
    _environment = env
    _tool_pool = env.tool_pool


def release_environment(env: Any) -> None:
    """Called when ``env`` closes: loops stop using its pool and server."""
    global _environment, _tool_pool
    if _environment is env:
        _environment = None
        _tool_pool = ToolWorkerPool(_tool_pool.size if hasattr(_tool_pool, "size") else 128)


def tool_executor() -> concurrent.futures.ThreadPoolExecutor:
    """The current executor, replaced by a fresh one if an environment file shut it down."""
    global _tool_executor
    if getattr(_tool_executor, "_shutdown", False):
        _tool_executor = concurrent.futures.ThreadPoolExecutor(max_workers=8, thread_name_prefix="hermes-tool")
    return _tool_executor


class HermesAgentLoop:
    """Upstream's agent loop: ``await HermesAgentLoop(server=..., tool_schemas=..., ...).run(messages)``."""

    def __init__(
        self,
        server: Any,
        tool_schemas: list[dict[str, Any]],
        valid_tool_names: set[str],
        max_turns: int = 30,
        task_id: str | None = None,
        temperature: float = 1.0,
        max_tokens: int | None = None,
        extra_body: dict[str, Any] | None = None,
    ) -> None:
        self.server = server
        self.tool_schemas = list(tool_schemas or [])
        self.valid_tool_names = set(valid_tool_names or ())
        self.max_turns = max_turns
        self.task_id = task_id or str(uuid.uuid4())
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.extra_body = extra_body

    def _tools(self) -> list[Any]:
        tools, unknown = [], []
        for schema in self.tool_schemas:
            name = (schema.get("function") or {}).get("name") if isinstance(schema, dict) else None
            if name is None or name not in self.valid_tool_names:
                continue
            tool = REGISTRY.find(name)
            if tool is None:
                unknown.append(name)
            else:
                tools.append(tool)
        if unknown:
            logger.warning("tools %s are not provided here; the model is not offered them", ", ".join(unknown))
        return tools

    def _settings(self) -> dict[str, Any]:
        env = _environment
        tool_timeout = float(env.config.terminal_timeout) if env is not None else DEFAULT_TOOL_TIMEOUT
        settings: dict[str, Any] = {
            "max_turns": self.max_turns,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens if self.max_tokens and self.max_tokens > 0 else None,
            "extra_body": self.extra_body,
            "tool_timeout": tool_timeout,
            "rollout_timeout": NO_BUDGET_SECONDS,
        }
        if env is not None:
            settings["extra_body"] = {**(env.request_extra_body() or {}), **(self.extra_body or {})} or None
        return settings

    def _needs_managed_server(self) -> bool:
        env = _environment
        return env is not None and env.phase == "managed" and self.server is env.server

    async def run(self, messages: list[dict[str, Any]]) -> AgentResult:
        """Run the loop on ``messages`` (extended in place, as upstream's) until the model stops or a limit."""
        ctx = task_context(self.task_id)
        tools = self._tools()
        ctx.run_context.enabled_tools = tuple(tool.name for tool in tools)
        if self._needs_managed_server():
            from hermes_env.managed import managed_server

            env = _environment
            async with managed_server(
                self.server,
                env.tokenizer,
                tool_parser=env.tool_call_parser,
                divergence_policy=env.config.divergence_policy,
            ) as managed:
                result = await _CoreLoop(managed, tools, ctx.run_context, pool=_tool_pool, **self._settings()).run(
                    messages
                )
        else:
            result = await _CoreLoop(self.server, tools, ctx.run_context, pool=_tool_pool, **self._settings()).run(
                messages
            )
        if result.messages is not messages:  # upstream extends the caller's list
            messages[:] = result.messages
        if result.failure is not None:
            # Environment files read only the messages and turn count: without this line the cause is lost.
            logger.warning(
                "agent loop of task %s failed after %d turns (%s): %s",
                self.task_id,
                result.turns_used,
                result.failure.kind,
                result.failure.message,
            )
        await upstream_task_images.agent_finished(self.task_id)  # the verifier comes next
        return result


__all__ = ["AgentResult", "HermesAgentLoop", "ToolError", "_tool_executor", "resize_tool_pool"]
