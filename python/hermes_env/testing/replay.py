"""The replay policy: answers from a file that maps a prompt pattern to the assistant turns to send.

With it, an environment someone else wrote is driven end to end with no model: write the turns a
correct agent would take (text and tool calls) for each of its prompts, and serve them with

    python -m hermes_env.testing.scripted_vllm --policy replay:turns.json     # Phase 2 (/generate)
    python -m hermes_env.testing.scripted_openai --policy replay:turns.json   # Phase 1 (chat completions)

The file (JSON, or YAML for a ``.yaml``/``.yml`` name)::

    {"rules": [
      {"match": "regex, searched (re.S) in the conversation's first user message",
       "turns": [
         {"content": "optional text", "tool_calls": [{"name": "terminal", "arguments": {"command": "ls /app"}}]},
         {"content": "Done."}
       ]}
     ],
     "default": [{"content": "I cannot help with that."}]}

(``arguments`` may also be a string holding the JSON object, as OpenAI sends it.)

Assistant turn i of a conversation (i = the number of assistant messages already in the prompt)
gets ``turns[i]`` of the first rule whose ``match`` is found, else of ``default``. Past the last
turn the answer is a plain final text (the last turn's content, or ""); with no rule matching and
no ``default`` it is "". Nothing here raises at answer time: a file that does not parse, a bad
regex or a turn of the wrong shape is refused when the file is loaded, naming the rule and field.

Tool calls are written in the model's own format: on ``/generate`` in the format of the
tokenizer's chat template (``hermes_env.parsers.detect_parser``; ``<tool_call>`` JSON for Qwen3,
rendered with the parser's ``render``), on the chat-completions stand-in as OpenAI ``tool_calls``.
The turn counts and the first user message come from the conversation itself, so the policy keeps
no state and serves any number of concurrent rollouts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from hermes_env.errors import ReplayFileError

__all__ = [
    "GenerateResponder",
    "ReplayPolicy",
    "ReplayRule",
    "ReplayScript",
    "ReplayToolCall",
    "ReplayTurn",
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class ReplayToolCall(_Strict):
    name: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)

    @field_validator("arguments", mode="before")
    @classmethod
    def _object_or_its_json(cls, value: Any) -> Any:
        # OpenAI's wire form, a string holding the JSON object, is taken too.
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as err:
                raise ValueError(f"a string here must hold a JSON object ({err})") from None
        if not isinstance(value, dict):
            raise ValueError(f"must be an object (or a string holding one), not {type(value).__name__}")
        return value


class ReplayTurn(_Strict):
    content: str | None = None
    tool_calls: list[ReplayToolCall] = Field(default_factory=list)

    @field_validator("tool_calls", mode="before")
    @classmethod
    def _null_is_none(cls, value: Any) -> Any:
        return [] if value is None else value

    @model_validator(mode="before")
    @classmethod
    def _says_something(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and "content" not in data and "tool_calls" not in data:
            raise ValueError('a turn needs "content", "tool_calls" or both')
        return data


class ReplayRule(_Strict):
    match: str
    turns: list[ReplayTurn] = Field(min_length=1)

    @field_validator("match")
    @classmethod
    def _compiles(cls, pattern: str) -> str:
        try:
            re.compile(pattern, re.S)
        except re.error as err:
            raise ValueError(f"not a valid regular expression ({err})") from None
        return pattern


class ReplayScript(_Strict):
    rules: list[ReplayRule] = Field(default_factory=list)
    default: list[ReplayTurn] | None = None

    @model_validator(mode="after")
    def _not_empty(self) -> ReplayScript:
        if not self.rules and self.default is None:
            raise ValueError('the file has neither "rules" nor "default"; add at least one')
        return self


def _where(loc: Sequence[int | str]) -> str:
    """``('rules', 0, 'turns', 1, 'content')`` -> ``rules[0].turns[1].content``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _load_data(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise ReplayFileError(f"replay file {path}: cannot read it ({err.strerror or err})") from None
    if path.suffix.lower() in (".yaml", ".yml"):
        import yaml

        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as err:
            raise ReplayFileError(f"replay file {path}: not valid YAML ({err})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise ReplayFileError(
            f"replay file {path}: not valid JSON (line {err.lineno}, column {err.colno}: {err.msg}); "
            "name it .yaml or .yml if it is YAML"
        ) from None


@dataclass(frozen=True)
class _ChatLayout:
    """Where a tokenizer's chat template puts turns, learnt from probe renderings."""

    assistant_header: str
    user_header: str | None
    user_end: str | None
    # Set where only assistant turns end with it (DeepSeek's end of sentence): finished turns are counted by it,
    # since such templates write no header before a reply that follows tool output.
    assistant_end: str | None = None

    def first_user_message(self, prompt: str) -> str:
        if self.user_header is not None:
            at = prompt.find(self.user_header)
            if at >= 0:
                start = at + len(self.user_header)
                stop = prompt.find(self.user_end, start) if self.user_end else -1
                if stop < 0:
                    stop = prompt.find(self.assistant_header, start)
                return prompt[start : stop if stop >= 0 else len(prompt)]
        # A template whose user turns could not be located: everything before the first assistant turn.
        head = prompt.find(self.assistant_header)
        return prompt if head < 0 else prompt[:head]

    def assistant_turns_done(self, prompt: str) -> int:
        if self.assistant_end:
            return prompt.count(self.assistant_end)
        # The prompt ends with the open generation header; every earlier header is a finished turn.
        return max(prompt.count(self.assistant_header) - 1, 0)


_PROBE_USER = "replayprobeuserone"
_PROBE_USER_2 = "replayprobeusertwo"
_PROBE_ASSISTANT = "replayprobeassistant"


def _chat_layout(tokenizer: Any) -> _ChatLayout:
    """Learn the layout from three probe renderings (user; user, assistant, user; and the generation prompt)."""
    from hermes_env.trajectory import _turn_markers, render_chat

    one = render_chat(tokenizer, [{"role": "user", "content": _PROBE_USER}], False)
    three = render_chat(
        tokenizer,
        [
            {"role": "user", "content": _PROBE_USER},
            {"role": "assistant", "content": _PROBE_ASSISTANT},
            {"role": "user", "content": _PROBE_USER_2},
        ],
        False,
    )
    if not all(probe in three for probe in (_PROBE_USER, _PROBE_ASSISTANT, _PROBE_USER_2)):
        raise ValueError("the chat template drops message text, so turns cannot be located in a prompt")
    user_at, assistant_at, user_2_at = (three.index(p) for p in (_PROBE_USER, _PROBE_ASSISTANT, _PROBE_USER_2))
    eos = getattr(tokenizer, "eos_token", None)
    try:
        markers = _turn_markers(tokenizer, {})
        header, end = markers.header, markers.end
    except ValueError:
        # Templates that close every user turn with the assistant header (DeepSeek's) give no generation
        # prompt to learn from: the header is then what separates a user's text from the reply's.
        header = three[user_at + len(_PROBE_USER) : assistant_at].strip()
        end = eos if isinstance(eos, str) else ""
    if not header:
        raise ValueError("cannot find the assistant header in the chat template's output")
    user_end = one[one.index(_PROBE_USER) + len(_PROBE_USER) :].strip() or None if _PROBE_USER in one else None
    between = three[assistant_at + len(_PROBE_ASSISTANT) : user_2_at].lstrip()
    if end and between.startswith(end):
        between = between[len(end) :]
    assistant_end = end if end and three.count(end) == 1 and three.index(end) > assistant_at else None
    return _ChatLayout(header, between.lstrip() or None, user_end, assistant_end)


def _message_text(content: Any) -> str:
    """An OpenAI message's content as text (a string, or a list of parts whose text parts are joined)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return ""


class ReplayPolicy:
    """Answers each assistant turn from a :class:`ReplayScript` (see the module docstring)."""

    def __init__(self, script: ReplayScript, *, source: str = "replay script") -> None:
        self.script = script
        self.source = source
        self._rules = [(re.compile(rule.match, re.S), rule.turns) for rule in script.rules]

    @classmethod
    def load(cls, path: str | Path) -> ReplayPolicy:
        """Read and check a replay file; :class:`ReplayFileError` names what is wrong and where."""
        path = Path(path)
        data = _load_data(path)
        return cls.from_data(data, source=f"replay file {path}")

    @classmethod
    def from_data(cls, data: Any, *, source: str = "replay script") -> ReplayPolicy:
        if not isinstance(data, Mapping):
            raise ReplayFileError(
                f'{source}: expected an object with "rules" and/or "default", got {type(data).__name__}'
            )
        try:
            script = ReplayScript.model_validate(dict(data))
        except ValidationError as err:
            problems = "; ".join(
                (f"{_where(e['loc'])}: " if e["loc"] else "") + e["msg"].removeprefix("Value error, ")
                for e in err.errors(include_url=False)
            )
            raise ReplayFileError(f"{source}: {problems}") from None
        return cls(script, source=source)

    @property
    def has_tool_calls(self) -> bool:
        turns = [t for _, ts in self._rules for t in ts] + list(self.script.default or [])
        return any(t.tool_calls for t in turns)

    def turn(self, first_user_message: str, done: int) -> ReplayTurn:
        """The turn to send after ``done`` assistant turns, in a conversation opened by ``first_user_message``."""
        turns = next((ts for pattern, ts in self._rules if pattern.search(first_user_message)), self.script.default)
        if not turns:
            return ReplayTurn(content="")
        if done < len(turns):
            return turns[done]
        return ReplayTurn(content=turns[-1].content or "")

    @staticmethod
    def render(turn: ReplayTurn, parser: str) -> str:
        """The raw model text of ``turn``, its tool calls in ``parser``'s format."""
        if not turn.tool_calls:
            return turn.content or ""
        from hermes_env.parsers import get_parser

        calls = [{"name": c.name, "arguments": c.arguments} for c in turn.tool_calls]
        return get_parser(parser).render(calls, content=turn.content)

    # -- adapters for the two stand-ins ------------------------------------------------------
    def respond_to_messages(self, messages: Sequence[Mapping[str, Any]], tools: Any = None) -> str:
        """Chat-completions form (ScriptedOpenAIServer with its default ``hermes`` parser, which turns the
        rendered calls into OpenAI ``tool_calls``)."""
        first = next((_message_text(m.get("content")) for m in messages if m.get("role") == "user"), "")
        done = sum(1 for m in messages if m.get("role") == "assistant")
        return self.render(self.turn(first, done), "hermes")

    def vllm_responder(self, tokenizer: Any) -> GenerateResponder:
        """A responder for ScriptedVLLMServer that reads turns from prompts rendered with ``tokenizer``'s chat
        template and writes tool calls in its format. Raises ``ValueError`` when the template cannot serve."""
        try:
            layout = _chat_layout(tokenizer)
        except ValueError as err:
            raise ValueError(f"{self.source}: the tokenizer's chat template cannot be read ({err})") from None
        parser = "hermes"
        if self.has_tool_calls:
            from hermes_env.parsers import detect_parser

            try:
                parser = detect_parser(tokenizer)
            except ValueError as err:
                raise ValueError(
                    f"{self.source} has tool calls, but the tokenizer has no known tool-call format: {err}"
                ) from None
        return GenerateResponder(self, layout, parser)


@dataclass(frozen=True)
class GenerateResponder:
    """ScriptedVLLMServer's responder for a replay policy: the turn from the decoded prompt, as raw model text."""

    policy: ReplayPolicy
    layout: _ChatLayout
    parser: str  # the tool-call format calls are written in

    def __call__(self, request: Any) -> str:
        prompt = request.prompt_text
        turn = self.policy.turn(self.layout.first_user_message(prompt), self.layout.assistant_turns_done(prompt))
        return self.policy.render(turn, self.parser)
