"""HermesAgentLoop: one multi-turn, tool-calling rollout against any chat-completion server.

The server is anything with ``await server.chat_completion(messages=..., tools=..., n=1, **sampling)``
returning an OpenAI-shaped chat completion: atroposlib's ServerManager (Phase 1, the server
parses tool calls) or hermes_env's managed server (Phase 2, hermes_env parses them and records
exact tokens). Each turn: ask the model, record its reasoning, run the tool calls it made
(concurrently when every tool allows it) through a shared bounded pool, feed the results
back, until the model answers without a tool call, the turn limit, the context limit, the
wall-clock budget, or (``max_repeated_tool_calls``) the model repeating one call; which one is
``AgentResult.end_reason``.

A tool call the model got wrong (unknown tool, arguments that are not a JSON object,
arguments the tool rejects, a tool that fails or hangs) is answered with an error message
the model sees in the tool result, and recorded as a :class:`ToolError`; it never ends the
rollout and is never replaced by empty arguments.

A model call that fails (HTTP error, unusable reply, no answer within the budget) or a tool
backend that fails under a call (``BackendFailure``: a worker died) ends the rollout as a
*failed* one: ``AgentResult.failure`` says why (kinds from :mod:`hermes_env.errors`), and the
environment drops its whole group. Nothing is logged here; the environment logs once per group.

Parse issues: a server that parses tool calls itself and says so (hermes_env's managed server
puts ``parse_issues`` on each message) has them copied to ``AgentResult.parse_issues`` with the
turn. A server that does not (Phase 1, an OpenAI-compatible server) hides malformed calls in
its content; there the only issues the loop can see are call arguments that are not a JSON
object, recorded as ``malformed_json`` / ``bad_arguments`` issues (offset into the arguments
text) besides their tool error of the same kind.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from hermes_env.agent.reasoning import extract_reasoning, separated_reasoning
from hermes_env.agent.steps import AgentStep, SequenceData, ToolResult, steps_from_messages
from hermes_env.agent.tool_pool import ToolWorkerPool
from hermes_env.errors import (
    BackendFailure,
    RolloutFailureKind,
    ToolArgumentError,
    ToolErrorKind,
    classify_policy_error,
    describe_error,
)
from hermes_env.message_fields import message_field
from hermes_env.parsers.parsed_call import ParsedToolCall, parsed_tool_calls
from hermes_env.timeouts import TOOL_GRACE_S, CallBudget
from hermes_env.tools.registry import error_json

# A tool enforces its own time limit (the backend kills the command and reports partial output);
# the pool's limit is a safety net this much later, for a tool that fails to stop itself (hermes_env.timeouts).
TOOL_GRACE_SECONDS = TOOL_GRACE_S

# Fewer tokens than this left before max_context_tokens: no further turn is started.
MIN_TURN_TOKENS = 32

# Why a rollout ended. Every one but "failed" is a finished rollout whose data may be trained on:
# stop (answered without a tool call), length (that answer was cut at max_tokens), turn_limit,
# context_limit (max_context_tokens reached), rollout_budget (rollout_timeout passed between
# turns), repeated_tool_calls (max_repeated_tool_calls identical calls in a row).
EndReason = Literal["stop", "length", "turn_limit", "context_limit", "rollout_budget", "repeated_tool_calls", "failed"]


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

    @property
    def tool_result(self) -> str:
        """What the model was shown (hermes-agent's ``ToolError.tool_result``)."""
        return self.message

    @property
    def error(self) -> str:
        """The error itself (hermes-agent's ``ToolError.error``): the ``error`` of a JSON result, else the text."""
        try:
            value = json.loads(self.message)
        except ValueError:
            return self.message
        return str(value.get("error") or self.message) if isinstance(value, dict) else self.message


@dataclass(frozen=True, slots=True)
class TurnParseIssue:
    """A problem reading the model's output on one turn (a ``ParseIssue`` with its turn).

    ``kind`` is a ``ParseIssue`` kind (``malformed_json``, ``truncated``, ``unknown_tool``, ...);
    ``offset`` is the byte offset into the reply's text (after reasoning is split off), or into
    the call's arguments for the issues the loop finds itself (see the module docstring).
    """

    turn: int
    kind: str
    offset: int
    message: str


@dataclass(frozen=True, slots=True)
class RolloutFailure:
    """Why a rollout failed (its group is dropped); ``turn`` is the model turn it happened on."""

    kind: RolloutFailureKind
    turn: int
    message: str


@dataclass
class AgentResult:
    """Everything a reward function and the trainer need from one rollout.

    ``turn`` fields (tool errors, parse issues, failure) are 0-based model-turn indices.
    """

    messages: list[dict[str, Any]]
    turns_used: int
    finished_naturally: bool
    reasoning_per_turn: list[str | None] = field(default_factory=list)
    finish_reasons: list[str | None] = field(default_factory=list)  # the server's finish_reason, per turn
    tool_errors: list[ToolError] = field(default_factory=list)
    managed_state: Any = None
    tool_calls_made: int = 0
    budget_exhausted: bool = False
    context_exhausted: bool = False  # stopped because another turn could overflow max_context_tokens
    end_reason: EndReason | None = None  # set when the loop returns
    failure: RolloutFailure | None = None  # set when the rollout failed (end_reason "failed")
    parse_issues: list[TurnParseIssue] = field(default_factory=list)
    repeated_tool_calls: int = 0  # calls identical (name and arguments) to the call just before them
    longest_repeat: int = 0  # most identical calls in a row (1 when any call was made and none repeated)
    # Computes ``trajectory_data`` on first use (the environment sets it; rendering tokens costs time).
    trajectory_loader: Callable[[], SequenceData | None] | None = field(default=None, repr=False, compare=False)
    _trajectory: list[SequenceData | None] = field(default_factory=list, init=False, repr=False, compare=False)

    @property
    def steps(self) -> list[AgentStep]:
        """One :class:`AgentStep` per model turn (hermes-agent's ``AtroposAgent`` result): the assistant's
        text, its tool calls and their :class:`ToolResult` s, in call order."""
        return steps_from_messages(self.messages)

    @property
    def num_steps(self) -> int:
        return sum(1 for message in self.messages if message.get("role") == "assistant")

    @property
    def tool_results(self) -> list[ToolResult]:
        """Every tool call's :class:`ToolResult`, in the order the calls were made."""
        return [result for step in self.steps for result in step.tool_results]

    @property
    def trajectory_data(self) -> SequenceData | None:
        """The rollout's tokens, masks and logprobs as trained (hermes-agent's ``SequenceData``), or None
        where the environment did not provide them."""
        if not self._trajectory:
            self._trajectory.append(self.trajectory_loader() if self.trajectory_loader is not None else None)
        return self._trajectory[0]

    @property
    def produced_output(self) -> bool:
        """True when the model answered at least once (a reward is only computed then)."""
        return self.turns_used > 0

    @property
    def error(self) -> str | None:
        """Why the rollout failed, in words (``failure.message``), or None."""
        return self.failure.message if self.failure is not None else None

    @property
    def final_response(self) -> str:
        """The content of the last assistant message (``final_response`` of hermes-agent's atropos/ integration)."""
        for message in reversed(self.messages):
            if message.get("role") == "assistant":
                return str(message.get("content") or "")
        return ""

    @property
    def total_tool_calls(self) -> int:
        """``tool_calls_made`` under the name hermes-agent's atropos/ integration (AgentEnv) uses."""
        return self.tool_calls_made

    @property
    def success(self) -> bool:
        """``AgentResult.success`` of hermes-agent's atropos/ integration: the loop ran without a failed model call."""
        return self.error is None and self.produced_output


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
        max_repeated_tool_calls: int | None = None,
        tool_delay_s: float = 0.0,
    ) -> None:
        if max_repeated_tool_calls is not None and max_repeated_tool_calls < 2:
            raise ValueError(
                f"max_repeated_tool_calls must be at least 2 (or None for no limit), got {max_repeated_tool_calls}"
            )
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
        self.max_repeated_tool_calls = max_repeated_tool_calls
        self.tool_delay_s = tool_delay_s  # AgentEnv's agent_tool_delay_s: a pause before each tool call
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
        last_call: tuple[str, str] | None = None
        streak = 0
        end: EndReason = "turn_limit"
        for turn in range(self.max_turns):
            sampling = self.sampling
            clamped = False
            if self.max_context_tokens and used_tokens:
                room = self.max_context_tokens - used_tokens
                if room < MIN_TURN_TOKENS:
                    # The conversation has (nearly) reached the trainer's limit: stop rather than grow past it.
                    end = "context_limit"
                    break
                if self.max_tokens is None or self.max_tokens > room:
                    sampling = {**self.sampling, "max_tokens": room}
                    clamped = True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                end = "rollout_budget"
                break
            budget = asyncio.timeout(remaining)
            try:
                async with budget:
                    if self.schemas:
                        completion = await self.server.chat_completion(
                            messages=messages, tools=self.schemas, n=1, **sampling
                        )
                    else:  # no `tools` key at all: some servers reject tools=null
                        completion = await self.server.chat_completion(messages=messages, n=1, **sampling)
            except TimeoutError as err:
                if not budget.expired():  # the server's own request timeout, not the rollout budget
                    reason = f"the model call on turn {turn + 1} failed: {describe_error(err)}"
                    _fail(result, "policy_timeout", turn, reason)
                    end = "failed"
                    break
                result.budget_exhausted = True
                _fail(
                    result,
                    "policy_timeout",
                    turn,
                    f"the model call on turn {turn + 1} did not return within the rollout budget "
                    f"(rollout_timeout={self.rollout_timeout:g}s)",
                )
                end = "failed"
                break
            except Exception as err:  # noqa: BLE001 - any server failure ends this rollout, not the run
                _fail(
                    result,
                    classify_policy_error(err),
                    turn,
                    f"the model call on turn {turn + 1} failed: {describe_error(err)}",
                )
                end = "failed"
                break
            if not getattr(completion, "choices", None):
                _fail(result, "policy_bad_response", turn, f"the model call on turn {turn + 1} returned no choices")
                end = "failed"
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
            result.finish_reasons.append(message_field(choice, "finish_reason"))
            server_issues = message_field(message, "parse_issues")
            for issue in server_issues or []:
                result.parse_issues.append(
                    TurnParseIssue(
                        turn=turn,
                        kind=str(message_field(issue, "kind", "unknown")),
                        offset=int(message_field(issue, "offset", 0)),
                        message=str(message_field(issue, "message", "")),
                    )
                )
            calls = parsed_tool_calls(message)
            assistant: dict[str, Any] = {"role": "assistant", "content": message_field(message, "content") or ""}
            # Servers put separated reasoning in `reasoning_content` (vLLM <0.10) or `reasoning`; chat
            # templates read `reasoning_content`. Reasoning left inside `content` stays there.
            separated = separated_reasoning(message)
            if separated is not None:
                assistant["reasoning_content"] = separated
            if calls:
                # Where the calls leave the loop (AgentResult.messages): OpenAI dicts, arguments as written.
                assistant["tool_calls"] = [call.to_openai() for call in calls]
            messages.append(assistant)
            if not calls:
                if message_field(choice, "finish_reason") == "length":
                    # Cut at max_tokens: by the context limit when that is what set max_tokens.
                    end = "context_limit" if clamped else "length"
                else:
                    end = "stop"
                break
            result.tool_calls_made += len(calls)
            repeat_limit_hit = False
            for call in calls:
                signature = (call.name, call.canonical_arguments)
                streak = streak + 1 if signature == last_call else 1
                last_call = signature
                result.repeated_tool_calls += streak > 1
                result.longest_repeat = max(result.longest_repeat, streak)
                if self.max_repeated_tool_calls is not None and streak >= self.max_repeated_tool_calls:
                    repeat_limit_hit = True
            if repeat_limit_hit:
                # The model is looping: end here, without running this turn's calls.
                end = "repeated_tool_calls"
                break
            tool_messages = await self._run_calls(turn, calls, deadline, result, parses=server_issues is not None)
            messages.extend(tool_messages)
            if result.failure is not None:  # the tool backend failed under a call
                end = "failed"
                break
            if time.monotonic() >= deadline:
                end = "rollout_budget"
                break
        result.end_reason = end
        result.finished_naturally = end == "stop"
        result.budget_exhausted = result.budget_exhausted or end == "rollout_budget"
        result.context_exhausted = end == "context_limit"
        state = getattr(self.server, "get_state", None)
        if callable(state):
            result.managed_state = state()
        return result

    async def _run_calls(
        self, turn: int, calls: Sequence[ParsedToolCall], deadline: float, result: AgentResult, *, parses: bool
    ) -> list[dict[str, Any]]:
        """Tool-result messages for one turn's calls, in call order.

        ``parses``: the server parsed the calls and reported its own parse issues.
        """
        tools = [self.tools.get(call.name) for call in calls]
        parallel = len(calls) > 1 and all(tool is not None and tool.parallel_safe for tool in tools)
        if parallel:
            outputs = await asyncio.gather(*(self._run_one(turn, call, deadline, result, parses) for call in calls))
        else:
            outputs = [await self._run_one(turn, call, deadline, result, parses) for call in calls]
        return [
            {"role": "tool", "tool_call_id": call.id, "content": output}
            for call, output in zip(calls, outputs, strict=True)
        ]

    async def _run_one(
        self, turn: int, call: ParsedToolCall, deadline: float, result: AgentResult, parses: bool
    ) -> str:
        name = call.name
        raw = call.arguments_text

        def fail(kind: ToolErrorKind, message: str) -> str:
            # The model sees hermes-agent's error shape: {"error": "..."}.
            shown = error_json(message.removeprefix("Error: "))
            result.tool_errors.append(ToolError(turn=turn, tool_name=name, arguments=raw, kind=kind, message=shown))
            return shown

        def unreadable(kind: Literal["malformed_json", "bad_arguments"], offset: int, message: str) -> str:
            if not parses:  # the server hid what it could not parse; this is all the loop can see
                result.parse_issues.append(TurnParseIssue(turn=turn, kind=kind, offset=offset, message=message))
            return fail(kind, message)

        tool = self.tools.get(name)
        if tool is None:
            available = ", ".join(sorted(self.tools)) or "none"
            return fail("unknown_tool", f"Error: unknown tool {name!r}. Available tools: {available}.")
        problem = call.problem
        if problem is not None:  # arguments that are not a JSON object (parsed once, in ParsedToolCall)
            return unreadable(problem.kind, problem.offset, problem.message)
        args = call.arguments
        timeout = CallBudget(self.tool_timeout, tool_grace=self.tool_grace).pool_limit(deadline - time.monotonic())
        if timeout <= 0:
            return fail("timeout", f"Error: {name!r} was not run: the rollout's time budget is used up.")
        if self.tool_delay_s > 0:
            await asyncio.sleep(self.tool_delay_s)
        try:
            output = await self.pool.run(lambda: tool.run(args, self.tool_context), timeout)
        except BackendFailure as err:
            # Not the model's doing: the rollout's workspace is gone or unusable, so the rollout fails.
            if result.failure is None:
                result.failure = RolloutFailure(
                    "sandbox_failed", turn, f"the tool backend failed under {name!r} on turn {turn + 1}: {err}"
                )
            return error_json(f"{name!r} could not run: {err}")
        except TimeoutError:
            return fail("timeout", f"Error: {name!r} did not finish within {timeout:.0f}s and was stopped.")
        except Exception as err:  # noqa: BLE001 - a failing tool fails this call only
            kind: ToolErrorKind = "bad_arguments" if isinstance(err, ToolArgumentError) else "tool_failed"
            detail = str(err) or type(err).__name__
            prefix = "invalid arguments for" if kind == "bad_arguments" else "tool failed:"
            return fail(kind, f"Error: {prefix} {name!r}: {detail}")
        failure = getattr(output, "error", None)
        if failure:
            # The tool answered with an error result (file not found, patch did not apply...): the model
            # sees the JSON as is; the rollout's statistics count it.
            result.tool_errors.append(
                ToolError(turn=turn, tool_name=name, arguments=raw, kind="tool_failed", message=str(output))
            )
        return output if isinstance(output, str) else json.dumps(output)


def _fail(result: AgentResult, kind: RolloutFailureKind, turn: int, message: str) -> None:
    result.failure = RolloutFailure(kind=kind, turn=turn, message=message)
