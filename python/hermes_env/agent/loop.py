"""HermesAgentLoop: one multi-turn, tool-calling rollout against any chat-completion server.

The server is anything with ``await server.chat_completion(messages=..., tools=..., n=1, **sampling)``
returning an OpenAI-shaped chat completion: atroposlib's ServerManager (Phase 1, the server
parses tool calls) or hermes_env's managed server (Phase 2, hermes_env parses them and records
exact tokens). Each turn: ask the model, record its reasoning, run the tool calls it made
(concurrently when every tool allows it) through a shared bounded pool, feed the results
back, until the model answers without a tool call, the turn limit, or the wall-clock budget.

A tool call the model got wrong (unknown tool, arguments that are not a JSON object,
arguments the tool rejects, a tool that fails or hangs) is answered with an error message
the model sees in the tool result, and recorded as a :class:`ToolError`; it never ends the
rollout and is never replaced by empty arguments.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from hermes_env.agent.reasoning import extract_reasoning, separated_reasoning
from hermes_env.agent.tool_pool import ToolWorkerPool
from hermes_env.errors import ToolArgumentError, ToolErrorKind

logger = logging.getLogger(__name__)

# A tool enforces its own time limit (the backend kills the command and reports partial output);
# the pool's limit is a safety net this much later, for a tool that fails to stop itself.
TOOL_GRACE_SECONDS = 5.0

# Fewer tokens than this left before max_context_tokens: no further turn is started.
MIN_TURN_TOKENS = 32


class ToolLike(Protocol):
    """What the loop needs of a tool (hermes_env.tools.registry.Tool satisfies it)."""

    name: str
    schema: dict[str, Any]
    parallel_safe: bool

    async def run(self, args: dict[str, Any], ctx: Any) -> str: ...


class ChatServer(Protocol):
    async def chat_completion(self, **kwargs: Any) -> Any: ...


@dataclass(frozen=True, slots=True)
class ToolError:
    """One tool call that failed; the model was shown ``message``."""

    turn: int
    tool_name: str
    arguments: str
    kind: ToolErrorKind
    message: str


@dataclass
class AgentResult:
    """Everything a reward function and the trainer need from one rollout."""

    messages: list[dict[str, Any]]
    turns_used: int
    finished_naturally: bool
    reasoning_per_turn: list[str | None] = field(default_factory=list)
    tool_errors: list[ToolError] = field(default_factory=list)
    managed_state: Any = None
    tool_calls_made: int = 0
    budget_exhausted: bool = False
    context_exhausted: bool = False  # stopped because another turn could overflow max_context_tokens
    error: str | None = None  # why the loop stopped early (model call failed), if it did

    @property
    def produced_output(self) -> bool:
        """True when the model answered at least once (a reward is only computed then)."""
        return self.turns_used > 0


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _tool_call_dicts(message: Any) -> list[dict[str, Any]]:
    """The message's tool calls as OpenAI dicts, arguments kept as the exact text the model produced."""
    calls = []
    for index, call in enumerate(_get(message, "tool_calls") or []):
        function = _get(call, "function") or {}
        calls.append(
            {
                "id": _get(call, "id") or f"call_{index}",
                "type": "function",
                "function": {"name": _get(function, "name") or "", "arguments": _get(function, "arguments") or ""},
            }
        )
    return calls


class HermesAgentLoop:
    """Runs one rollout; construct one per rollout (it holds no state between ``run`` calls)."""

    def __init__(
        self,
        server: ChatServer,
        tools: Sequence[ToolLike],
        tool_context: Any,
        *,
        pool: ToolWorkerPool,
        max_turns: int = 10,
        temperature: float = 1.0,
        max_tokens: int | None = None,
        tool_timeout: float = 60.0,
        tool_grace: float = TOOL_GRACE_SECONDS,
        rollout_timeout: float = 600.0,
        extra_body: dict[str, Any] | None = None,
        sampling: dict[str, Any] | None = None,
        max_context_tokens: int | None = None,
    ) -> None:
        self.server = server
        self.tools = {tool.name: tool for tool in tools}
        self.schemas = [tool.schema for tool in tools]
        self.tool_context = tool_context
        self.pool = pool
        self.max_turns = max_turns
        self.tool_timeout = tool_timeout
        self.tool_grace = tool_grace
        self.rollout_timeout = rollout_timeout
        self.max_context_tokens = max_context_tokens
        self.max_tokens = max_tokens
        self.sampling: dict[str, Any] = {"temperature": temperature, **(sampling or {})}
        if max_tokens is not None:
            self.sampling["max_tokens"] = max_tokens
        if extra_body:
            self.sampling["extra_body"] = dict(extra_body)

    async def run(self, messages: list[dict[str, Any]]) -> AgentResult:
        """Continue the conversation ``messages`` (system + user prompt) until the model is done."""
        messages = [dict(m) for m in messages]
        result = AgentResult(messages=messages, turns_used=0, finished_naturally=False)
        deadline = time.monotonic() + self.rollout_timeout
        used_tokens = 0  # prompt + completion of the last call, as the server reported them
        for turn in range(self.max_turns):
            sampling = self.sampling
            if self.max_context_tokens and used_tokens:
                room = self.max_context_tokens - used_tokens
                if room < MIN_TURN_TOKENS:
                    # The conversation has (nearly) reached the trainer's limit: stop rather than grow past it.
                    result.context_exhausted = True
                    break
                if self.max_tokens is None or self.max_tokens > room:
                    sampling = {**self.sampling, "max_tokens": room}
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                result.budget_exhausted = True
                break
            try:
                async with asyncio.timeout(remaining):
                    if self.schemas:
                        completion = await self.server.chat_completion(
                            messages=messages, tools=self.schemas, n=1, **sampling
                        )
                    else:  # no `tools` key at all: some servers reject tools=null
                        completion = await self.server.chat_completion(messages=messages, n=1, **sampling)
            except TimeoutError:
                result.budget_exhausted = True
                result.error = f"model call did not return within the rollout budget of {self.rollout_timeout:g}s"
                break
            except Exception as err:  # noqa: BLE001 - any server failure ends this rollout, not the run
                result.error = f"model call failed on turn {turn + 1}: {type(err).__name__}: {err}"
                logger.warning("rollout stopped: %s", result.error)
                break
            if not getattr(completion, "choices", None):
                result.error = f"model call on turn {turn + 1} returned no choices"
                logger.warning("rollout stopped: %s", result.error)
                break
            choice = completion.choices[0]
            message = choice.message
            usage = getattr(completion, "usage", None)
            if usage is not None:
                used_tokens = int(getattr(usage, "prompt_tokens", 0) or 0) + int(
                    getattr(usage, "completion_tokens", 0) or 0
                )
            result.turns_used += 1
            result.reasoning_per_turn.append(extract_reasoning(message))
            calls = _tool_call_dicts(message)
            assistant: dict[str, Any] = {"role": "assistant", "content": _get(message, "content") or ""}
            # Servers put separated reasoning in `reasoning_content` (vLLM <0.10) or `reasoning`; chat
            # templates read `reasoning_content`. Reasoning left inside `content` stays there.
            separated = separated_reasoning(message)
            if separated is not None:
                assistant["reasoning_content"] = separated
            if calls:
                assistant["tool_calls"] = calls
            messages.append(assistant)
            if not calls:
                result.finished_naturally = _get(choice, "finish_reason") != "length"
                break
            result.tool_calls_made += len(calls)
            tool_messages = await self._run_calls(turn, calls, deadline, result)
            messages.extend(tool_messages)
            if time.monotonic() >= deadline:
                result.budget_exhausted = True
                break
        state = getattr(self.server, "get_state", None)
        if callable(state):
            result.managed_state = state()
        return result

    async def _run_calls(
        self, turn: int, calls: list[dict[str, Any]], deadline: float, result: AgentResult
    ) -> list[dict[str, Any]]:
        """Tool-result messages for one turn's calls, in call order."""
        tools = [self.tools.get(call["function"]["name"]) for call in calls]
        parallel = len(calls) > 1 and all(tool is not None and tool.parallel_safe for tool in tools)
        if parallel:
            outputs = await asyncio.gather(*(self._run_one(turn, call, deadline, result) for call in calls))
        else:
            outputs = [await self._run_one(turn, call, deadline, result) for call in calls]
        return [
            {"role": "tool", "tool_call_id": call["id"], "content": output}
            for call, output in zip(calls, outputs, strict=True)
        ]

    async def _run_one(self, turn: int, call: dict[str, Any], deadline: float, result: AgentResult) -> str:
        name = call["function"]["name"]
        raw = call["function"]["arguments"]

        def fail(kind: ToolErrorKind, message: str) -> str:
            result.tool_errors.append(ToolError(turn=turn, tool_name=name, arguments=raw, kind=kind, message=message))
            return message

        tool = self.tools.get(name)
        if tool is None:
            available = ", ".join(sorted(self.tools)) or "none"
            return fail("unknown_tool", f"Error: unknown tool {name!r}. Available tools: {available}.")
        try:
            args = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError as err:
            return fail(
                "malformed_json",
                f"Error: the arguments of {name!r} are not valid JSON ({err.msg} at position {err.pos}): {raw!r}. "
                "Call the tool again with a JSON object matching its schema.",
            )
        if not isinstance(args, dict):
            return fail(
                "bad_arguments",
                f"Error: the arguments of {name!r} must be a JSON object, got {type(args).__name__}: {raw!r}.",
            )
        timeout = min(self.tool_timeout + self.tool_grace, deadline - time.monotonic())
        if timeout <= 0:
            return fail("timeout", f"Error: {name!r} was not run: the rollout's time budget is used up.")
        try:
            output = await self.pool.run(lambda: tool.run(args, self.tool_context), timeout)
        except TimeoutError:
            return fail("timeout", f"Error: {name!r} did not finish within {timeout:.0f}s and was stopped.")
        except Exception as err:  # noqa: BLE001 - a failing tool fails this call only
            kind: ToolErrorKind = "bad_arguments" if isinstance(err, ToolArgumentError) else "tool_failed"
            detail = str(err) or type(err).__name__
            prefix = "invalid arguments for" if kind == "bad_arguments" else "tool failed:"
            return fail(kind, f"Error: {prefix} {name!r}: {detail}")
        return output if isinstance(output, str) else json.dumps(output)
