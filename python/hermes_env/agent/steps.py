"""A rollout as hermes-agent's ``atropos/`` integration (AgentEnv) sees it: steps of tool calls and results.

hermes-agent's ``AtroposAgent`` returns an ``AgentResult`` whose ``steps`` are one
:class:`AgentStep` per model turn (the assistant's text, the :class:`AgentToolCall` s it made, the
:class:`ToolResult` each returned) and whose ``trajectory_data`` is a :class:`SequenceData`
(tokens, masks, logprobs). hermes_env's :class:`~hermes_env.agent.loop.AgentResult` derives the
same views from its messages (:func:`steps_from_messages`), so reward code written against
either reads the same fields.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

from hermes_env._renamed import old_names

# hermes-agent's sandbox tool names for the same tools.
TOOL_ALIASES = {"bash": "terminal", "bash_stateful": "terminal_stateful"}

_TOOL_CALL_BLOCK = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.S)
_NAME_THEN_JSON = re.compile(r"^\s*([A-Za-z0-9_.:\\-]+)\s*(\{.*\})\s*$", re.S)


# ``ToolCall`` was this module's name for AgentToolCall; hermes_env.parsers.ToolCall is the parser's (another thing).
# It still works for a release (hermes_env._renamed.OLD_NAMES), with a warning once.
__getattr__ = old_names(__name__)


@dataclass
class AgentToolCall:
    """A tool call as hermes-agent's ``atropos/`` integration passes it: ``name`` and its ``arguments`` as a
    dict (upstream's ``atropos.tools.ToolCall``, which ``hermes_env.agent_env`` exports under that name)."""

    name: str
    arguments: dict[str, Any]
    raw_text: str = ""
    uniq_id: str = field(default_factory=lambda: str(uuid.uuid4()))

    @classmethod
    def parse_from_text(cls, text: str) -> list[AgentToolCall]:
        """The well-formed ``<tool_call>`` blocks of ``text``: Hermes JSON (``{"name", "arguments"}``) or
        ``name{json}``; a block that is not one of these is skipped, as upstream does."""
        calls: list[AgentToolCall] = []
        for inner in _TOOL_CALL_BLOCK.findall(text or ""):
            cleaned = inner.strip()
            if cleaned.startswith("{"):
                try:
                    data = json.loads(cleaned)
                except json.JSONDecodeError:
                    continue
                if not isinstance(data, dict):
                    continue
                name, args, uniq = data.get("name"), data.get("arguments", {}), data.get("uniq_id") or data.get("id")
            else:
                match = _NAME_THEN_JSON.match(cleaned)
                if not match:
                    continue
                try:
                    name, args, uniq = match.group(1), json.loads(match.group(2)), None
                except json.JSONDecodeError:
                    continue
            if isinstance(name, str) and name and isinstance(args, dict):
                calls.append(cls(name, args, inner, str(uniq) if uniq else str(uuid.uuid4())))
        return calls

    @classmethod
    def has_tool_call(cls, text: str) -> bool:
        return "<tool_call>" in (text or "")


@dataclass
class ToolResult:
    """A tool call's outcome (hermes-agent's ``atropos.tools.ToolResult``)."""

    success: bool
    output: str = ""
    error: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    uniq_id: str | None = None

    def to_xml(self) -> str:
        data: dict[str, Any] = {"success": self.success, "output": self.output}
        if self.uniq_id:
            data["uniq_id"] = self.uniq_id
        if self.error:
            data["error"] = self.error
        if self.metadata:
            data["metadata"] = self.metadata
        return f"<tool_response>{json.dumps(data)}</tool_response>"

    def to_dict(self) -> dict[str, Any]:
        return {
            "success": self.success,
            "output": self.output,
            "error": self.error,
            "metadata": self.metadata,
            "uniq_id": self.uniq_id,
        }


@dataclass
class SequenceData:
    """A rollout's tokens for training: ``masked_tokens`` is -100 where nothing is trained; ``logprobs``
    is 1.0 there and the sampler's logprob (0.0 where none was returned) on trained tokens."""

    full_text: str
    tokens: list[int]
    masked_tokens: list[int]
    logprobs: list[float]
    metadata: dict[str, Any] | None = None


@dataclass
class AgentStep:
    """One model turn: its text, the tool calls it made and what each returned (in call order)."""

    step_number: int
    assistant_message: str
    tool_calls: list[AgentToolCall] = field(default_factory=list)
    tool_results: list[ToolResult] = field(default_factory=list)
    sequence_data: SequenceData | None = None

    @property
    def has_tool_calls(self) -> bool:
        return bool(self.tool_calls)


def tool_result_from_text(name: str, text: str, uniq_id: str | None = None) -> ToolResult:
    """The :class:`ToolResult` of a tool's answer as the model saw it.

    ``terminal`` (``{"output", "exit_code", "error"}``) succeeds when the command exited 0, its error
    then being ``Exit code: N`` as hermes-agent's sandbox reports it; another tool's JSON object fails
    when it carries an ``error`` or ``"success": false``; plain text is a success.
    """
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        value = None
    if not isinstance(value, dict):
        return ToolResult(True, str(text), "", {}, uniq_id)
    error = str(value.get("error") or "")
    if TOOL_ALIASES.get(name, name) in ("terminal", "terminal_stateful") and "exit_code" in value:
        code = value.get("exit_code")
        success = code == 0 and not error
        if not success and not error:
            error = f"Exit code: {code}"
        metadata = {"exit_code": code, "timeout": code == 124}
        return ToolResult(success, str(value.get("output") or ""), error, metadata, uniq_id)
    output = value.get("content", value.get("output"))
    success = not error and value.get("success", True) is not False
    return ToolResult(success, output if isinstance(output, str) else str(text), error, value, uniq_id)


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw or "{}")
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def steps_from_messages(messages: list[dict[str, Any]]) -> list[AgentStep]:
    """One :class:`AgentStep` per assistant message, with its calls and the ``tool`` messages answering them."""
    steps: list[AgentStep] = []
    results: dict[str, tuple[str, str]] = {}  # tool_call_id -> (tool name, content)
    for message in messages:
        if message.get("role") == "tool" and message.get("tool_call_id"):
            results[str(message["tool_call_id"])] = (str(message.get("name") or ""), str(message.get("content") or ""))
    for message in messages:
        if message.get("role") != "assistant":
            continue
        step = AgentStep(len(steps) + 1, str(message.get("content") or ""))
        for index, call in enumerate(message.get("tool_calls") or []):
            function = call.get("function") or {}
            name = str(function.get("name") or "")
            call_id = str(call.get("id") or f"call_{index}")
            raw = function.get("arguments")
            step.tool_calls.append(
                AgentToolCall(name, _arguments(raw), raw if isinstance(raw, str) else json.dumps(raw), call_id)
            )
            if call_id in results:
                step.tool_results.append(tool_result_from_text(name, results[call_id][1], call_id))
            else:  # kept aligned with tool_calls (upstream code zips them)
                step.tool_results.append(ToolResult(False, "", "the call has no recorded result", {}, call_id))
        steps.append(step)
    return steps
