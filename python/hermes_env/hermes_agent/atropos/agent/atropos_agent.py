"""hermes-agent's ``AtroposAgent``: one agent run on a task string, its tools run through ``execute_tool``.

``AtroposAgent(server, tools, config, tokenizer, execute_tool).run(task)`` runs hermes_env's
:class:`~hermes_env.agent.loop.HermesAgentLoop` (tools offered through the chat template, tool
calls parsed by the server in Phase 1 or by hermes_env's managed server in Phase 2, tool results
as ``tool`` messages) and answers hermes_env's :class:`~hermes_env.agent.loop.AgentResult`, which
has upstream's ``success``, ``final_response``, ``steps``, ``total_tool_calls``, ``error`` and
``trajectory_data``. Each tool call the model makes is ``await execute_tool(ToolCall(name,
arguments))``; the ``ToolResult`` is shown to the model as the tool's answer.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from hermes_env.agent.loop import AgentResult, HermesAgentLoop
from hermes_env.agent.steps import AgentStep, SequenceData, ToolResult
from hermes_env.agent.steps import AgentToolCall as ToolCall
from hermes_env.agent.tool_pool import ToolWorkerPool
from hermes_env.agent_env.env import AgentConfig, sequence_data
from hermes_env.hermes_agent.atropos.tools.base import ToolRegistry

__all__ = ["AgentConfig", "AgentResult", "AgentStep", "AtroposAgent", "SequenceData"]

# Tool calls one agent run may have in flight at once.
_AGENT_TOOL_SLOTS = 8


def tool_answer(result: ToolResult) -> str:
    """What the model sees for a ``ToolResult``: terminal's ``{"output", "exit_code", "error"}`` where the result
    carries an exit code, the output of another successful call, else ``{"error", "output"}``."""
    if "exit_code" in result.metadata:
        return json.dumps(
            {"output": result.output, "exit_code": result.metadata["exit_code"], "error": result.error or None}
        )
    if result.success:
        return result.output
    return json.dumps({"error": result.error or "the tool failed", "output": result.output})


@dataclass
class _ExecutedTool:
    """A tool offered to the model whose calls go to ``execute_tool``."""

    name: str
    schema: dict[str, Any]
    execute_tool: Callable[[ToolCall], Awaitable[ToolResult]]
    parallel_safe: bool = False  # upstream runs a step's calls one after the other

    async def run(self, args: dict[str, Any], ctx: Any) -> str:
        return tool_answer(await self.execute_tool(ToolCall(self.name, args)))


class AtroposAgent:
    """hermes-agent's agent on hermes_env's loop (see the module docstring)."""

    def __init__(
        self,
        server: Any,
        tools: ToolRegistry | None = None,
        config: AgentConfig | None = None,
        tokenizer: Any = None,
        execute_tool: Callable[[ToolCall], Awaitable[ToolResult]] | None = None,
    ) -> None:
        self.server = server
        self.tools = tools if tools is not None else ToolRegistry()
        self.config = config or AgentConfig()
        self.tokenizer = tokenizer if tokenizer is not None else getattr(server, "tokenizer", None)
        self.execute_tool = execute_tool or self.tools.execute

    def _build_system_prompt(self) -> str:
        """The system message (``config.system_prompt``; tools reach the model through the chat template)."""
        return self.config.system_prompt or ""

    def _phase(self) -> str:
        from atroposlib.envs.server_handling.openai_server import OpenAIServer

        from hermes_env.env.phases import resolve_phase

        if hasattr(self.server, "servers"):
            return resolve_phase("auto", self.server)
        return "openai" if isinstance(self.server, OpenAIServer) else "managed"

    async def run(self, task: str, initial_messages: list[dict[str, Any]] | None = None) -> AgentResult:
        messages: list[dict[str, Any]] = []
        if self.config.system_prompt:
            messages.append({"role": "system", "content": self.config.system_prompt})
        messages += [dict(m) for m in initial_messages or ()]
        messages.append({"role": "user", "content": task})
        tools = [_ExecutedTool(schema.name, schema.to_dict(), self.execute_tool) for schema in self.tools.get_schemas()]
        settings: dict[str, Any] = {
            "max_turns": self.config.max_steps,
            "temperature": self.config.temperature if self.config.temperature is not None else 1.0,
            "max_tokens": self.config.max_tokens,
            "tool_delay_s": self.config.tool_delay_s,
        }
        phase = self._phase()
        pool = ToolWorkerPool(_AGENT_TOOL_SLOTS)
        if phase == "managed":
            from hermes_env.managed import managed_server
            from hermes_env.parsers import detect_parser

            async with managed_server(
                self.server, self.tokenizer, tool_parser=detect_parser(self.tokenizer) or "auto"
            ) as managed:
                result = await HermesAgentLoop(managed, tools, None, pool=pool, **settings).run(messages)
        else:
            result = await HermesAgentLoop(self.server, tools, None, pool=pool, **settings).run(messages)
        schemas = [tool.schema for tool in tools]
        result.trajectory_loader = lambda: sequence_data(result, phase, self.tokenizer, schemas)
        return result
