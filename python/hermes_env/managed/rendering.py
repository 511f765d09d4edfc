"""Chat-template rendering for the managed server: replies replayed raw, each turn rendered incrementally.

The managed server never asks the template to re-serialise what the model produced: an
assistant message it generated is rendered from the exact raw text the model emitted
(reasoning and tool-call markup included), so the rendered prompt re-tokenises to the tokens
the model already has whenever the template leaves that text alone.

**Incremental turns.** Rendering the whole conversation every turn costs O(conversation) in
the template engine, so a branch renders a *window* instead: the messages before its first
reply (the task prompt), its last :data:`WINDOW_TURNS` replies with what came between them,
then the new messages. The window is accepted only when the template reproduces, character
for character, the first prompt and the trajectory's own text of those replies before the new
text begins (:func:`window_delta`); what follows is the new turn's text. So every turn checks
that the template still renders the recent history exactly as the trajectory holds it, and that
the new messages render the same after the window as they did after the whole conversation
(:func:`template_profile`'s probes). What the window cannot see is history older than it: a
template may rewrite it when certain messages arrive (Qwen3 drops the reasoning of every reply
since the last user message when a new user message comes). :func:`template_profile` finds,
once per template, tools and template arguments, which kinds of new messages can do that, by
rendering small probe conversations in full and through the window; those kinds of turn, and
any window the template does not reproduce, take a full render, and the trajectory's divergence
policy decides as before.

Tokenisation is incremental too: tokenizers split special tokens out of the text before anything
else, so nothing merges across one. A branch keeps the text and token count of its trajectory
from the last special token on (``RenderState.tail_text`` / ``tail_len``, which always covers the
last completion); a turn tokenizes that tail plus the new text, checks that the ids start with the
trajectory's own last ``tail_len`` ids (so a completion whose tokens are not what the tokenizer
makes of its text is caught, as a full render would catch it), and appends the rest
(:mod:`hermes_env.managed.tokenization` gives the boundary tokens and the encoder).
"""

from __future__ import annotations

import json
import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hermes_env.trajectory import render_chat

# Stands in for the branch's last assistant turn when locating where new messages begin. It
# has no whitespace or markup, so templates (which may strip or split content) keep it whole.
SENTINEL = "hermesenvsplitmarker7f3a9c"

# Replies (with the messages between them) that a branch re-renders each turn to check that the
# template still renders its recent history as the trajectory holds it.
WINDOW_TURNS = 1

Message = Mapping[str, Any]


def render_text(
    tokenizer: Any,
    messages: Sequence[Message],
    tools: Sequence[Mapping[str, Any]] | None,
    template_kwargs: Mapping[str, Any],
    add_generation_prompt: bool = True,
) -> str:
    """The prompt text for ``messages`` (with the generation prompt appended, by default)."""
    kwargs = dict(template_kwargs)
    if tools:
        kwargs["tools"] = list(tools)
    return render_chat(tokenizer, messages, add_generation_prompt, **kwargs)


def new_turn_text(
    tokenizer: Any,
    messages: Sequence[Message],
    last_assistant: int,
    tools: Sequence[Mapping[str, Any]] | None,
    template_kwargs: Mapping[str, Any],
    produced_end: str | None,
) -> str:
    """The text of everything after message ``last_assistant`` (plus the generation prompt).

    Renders once more with that assistant message's content replaced by :data:`SENTINEL` and
    returns the text after it. ``produced_end`` is the end-of-turn text the model itself
    generated (e.g. ``<|im_end|>``); it is already in the trajectory, so it is skipped here.
    """
    probe = [dict(m) for m in messages]
    probe[last_assistant] = {"role": "assistant", "content": SENTINEL}
    text = render_text(tokenizer, probe, tools, template_kwargs)
    at = text.rfind(SENTINEL)
    if at < 0:
        raise ValueError(
            "the chat template dropped an assistant message's content, so the new turn cannot be located; "
            "use divergence_policy='warn_and_restart'"
        )
    after = text[at + len(SENTINEL) :]
    if produced_end and after.startswith(produced_end):
        after = after[len(produced_end) :]
    return after


# -- branch render state -----------------------------------------------------------------------


@dataclass(frozen=True)
class RenderState:
    """What a branch needs to render and tokenize its next turn without the whole conversation.

    The window conversation is ``head_messages + window_messages + <new messages>``. Rendered,
    it must start with ``head_text + window_text``: the first prompt (the head messages with the
    generation prompt), then the trajectory's own text from the first window reply's first
    character to its end.
    """

    head_messages: tuple[Message, ...]  # as the template sees them
    head_text: str
    window_messages: tuple[Message, ...]  # from the window's first reply on, replies as raw text
    window_text: str
    turns: tuple[tuple[int, int], ...]  # per window reply: (index in window_messages, offset in window_text)
    tail_text: str  # the trajectory's text from its last boundary token on ...
    tail_len: int  # ... and how many of its last tokens that text is

    @classmethod
    def first(
        cls,
        head_messages: Sequence[Message],
        head_text: str,
        reply: Message,
        completion: tuple[str, int],
        tail: tuple[str, int],
    ) -> RenderState:
        """The state after a fully rendered turn: the window holds only its reply.

        ``completion`` is the reply's text (raw output and generated end token) and token count;
        ``tail`` the prompt's text from its last boundary token on, and its token count.
        """
        empty = cls(tuple(head_messages), head_text, (), "", (), "", 0)  # no window yet
        return empty.advanced((), "", reply, completion, tail)

    def advanced(
        self,
        new_messages: Sequence[Message],
        delta: str,
        reply: Message,
        completion: tuple[str, int],
        tail: tuple[str, int],
    ) -> RenderState:
        """The state after an incremental turn: ``new_messages`` rendered as ``delta``, then the reply."""
        text, count = completion
        messages = (*self.window_messages, *new_messages, reply)
        window = self.window_text + delta + text
        turns = (*self.turns, (len(messages) - 1, len(window) - len(text)))
        if len(turns) > WINDOW_TURNS:
            first, offset = turns[len(turns) - WINDOW_TURNS]
            messages, window = messages[first:], window[offset:]
            turns = tuple((i - first, at - offset) for i, at in turns[len(turns) - WINDOW_TURNS :])
        return RenderState(
            head_messages=self.head_messages,
            head_text=self.head_text,
            window_messages=messages,
            window_text=window,
            turns=turns,
            tail_text=tail[0] + text,
            tail_len=tail[1] + count,
        )


def window_delta(
    tokenizer: Any,
    state: RenderState,
    new_messages: Sequence[Message],
    tools: Sequence[Mapping[str, Any]] | None,
    template_kwargs: Mapping[str, Any],
) -> str | None:
    """The text ``new_messages`` add (generation prompt included), rendered through the window.

    ``None`` when the template does not reproduce the head and the window's text exactly (or
    cannot render the window at all): the caller renders the whole conversation instead.
    """
    messages = [*state.head_messages, *state.window_messages, *new_messages]
    try:
        text = render_text(tokenizer, messages, tools, template_kwargs)
    except Exception:  # noqa: BLE001 - a template may refuse the shortened conversation; the full render decides
        return None
    head, window = state.head_text, state.window_text
    if not (text.startswith(head) and text.startswith(window, len(head))):
        return None
    return text[len(head) + len(window) :]


# -- which turns may be rendered incrementally, per template -----------------------------------

_PROBE_TOOL_CALL = '<tool_call>\n{"name": "probe", "arguments": {"n": %d}}\n</tool_call>'
# A probe turn: (reply has reasoning, what follows the reply: "tool" after a tool call, "user" after prose).
_ProbeTurn = tuple[bool, str]
# The history before the window (two turns of one kind), then the window's first turn: every kind of
# history a window could miss (reasoning, tool results, user messages only before the window).
_GAPS: tuple[_ProbeTurn, ...] = ((True, "tool"), (False, "tool"), (True, "user"), (False, "user"))
_WINDOWS: tuple[_ProbeTurn, ...] = ((False, "tool"), (False, "user"))
# The kinds of new message a turn adds, probed as these sequences.
_PATTERNS = (("tool",), ("tool", "tool"), ("user",), ("tool", "user"), ("user", "user"), ("system",))


def _probe_reply(i: int, reasoning: bool, call: bool) -> dict[str, Any]:
    body = _PROBE_TOOL_CALL % i if call else f"Probe answer {i}."
    think = f"<think>\nProbe reasoning {i}.\n</think>\n\n" if reasoning else ""
    return {"role": "assistant", "content": think + body}


def _probe_message(role: str, i: int) -> dict[str, Any]:
    if role == "tool":
        return {"role": "tool", "tool_call_id": f"probe_call_{i}", "content": f"probe result {i}"}
    return {"role": role, "content": f"Probe {role} message {i}."}


def _probe_end(tokenizer: Any, tools: Any, template_kwargs: Mapping[str, Any]) -> str:
    """The end-of-turn text a model generates after its reply (e.g. ``<|im_end|>``), or ``""``."""
    marker = "hermesenvprobeend7f3a9c"
    messages = [{"role": "user", "content": "Probe."}, {"role": "assistant", "content": marker}]
    text = render_text(tokenizer, messages, tools, template_kwargs, add_generation_prompt=False)
    after = text[text.rfind(marker) + len(marker) :] if marker in text else ""
    specials = sorted(getattr(tokenizer, "all_special_tokens", None) or [], key=len, reverse=True)
    return next((s for s in specials if s and after.startswith(s)), "")


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _probe_history(
    tokenizer: Any, tools: Any, template_kwargs: Mapping[str, Any], end: str, turns: Sequence[_ProbeTurn]
) -> dict[tuple[str, ...], list[bool]]:
    """Verdicts per pattern for one probe history, a conversation whose last reply the pattern follows.

    A verdict is ``True`` when the window gives exactly the full render's new text and the full
    render leaves the history before the last reply unchanged, ``False`` when not. A history that
    is itself not prefix-stable, or whose window the template does not reproduce, gives none.
    """
    conversation: list[dict[str, Any]] = [_probe_message("system", 0), _probe_message("user", 0)]
    starts: list[int] = []  # where each reply sits in conversation
    for i, (reasoning, follow) in enumerate(turns):
        starts.append(len(conversation))
        conversation.append(_probe_reply(i, reasoning, follow == "tool"))
        conversation.append(_probe_message(follow, i))
    starts.append(len(conversation))
    prompts = [render_text(tokenizer, conversation[:s], tools, template_kwargs) for s in starts]
    for i in range(1, len(prompts)):
        if not prompts[i].startswith(prompts[i - 1] + conversation[starts[i - 1]]["content"] + end):
            return {}
    history = render_text(tokenizer, conversation, tools, template_kwargs, add_generation_prompt=False)
    unchanged = _common_prefix(history, prompts[-1])
    first = max(0, len(starts) - WINDOW_TURNS)
    verdicts: dict[tuple[str, ...], list[bool]] = {}
    for pattern in _PATTERNS:
        for reasoning in (False, True):
            last = _probe_reply(len(turns), reasoning, pattern[0] == "tool")
            trajectory = prompts[-1] + last["content"] + end
            new = [_probe_message(role, 100 + j) for j, role in enumerate(pattern)]
            try:
                full = render_text(tokenizer, [*conversation, last, *new], tools, template_kwargs)
                state = RenderState(
                    head_messages=tuple(conversation[: starts[0]]),
                    head_text=prompts[0],
                    window_messages=(*conversation[starts[first] :], last),
                    window_text=trajectory[len(prompts[first]) :],
                    turns=(),
                    tail_text="",
                    tail_len=0,
                )
                delta = window_delta(tokenizer, state, new, tools, template_kwargs)
            except Exception:  # noqa: BLE001 - the template refused this probe: no window for these messages
                verdicts.setdefault(pattern, []).append(False)
                continue
            if full[:unchanged] != trajectory[:unchanged]:
                verdicts.setdefault(pattern, []).append(False)  # rewrites history the window cannot see
            elif delta is not None:
                verdicts.setdefault(pattern, []).append(full == trajectory + delta)
    return verdicts


@dataclass(frozen=True)
class TemplateProfile:
    """Which kinds of turn a template renders the same through the window as in full."""

    incremental: frozenset[frozenset[str]]  # role sets of new messages that may use the window

    def allows(self, new_messages: Sequence[Message]) -> bool:
        return frozenset(str(m.get("role")) for m in new_messages) in self.incremental


def _learn_profile(tokenizer: Any, tools: Any, template_kwargs: Mapping[str, Any]) -> TemplateProfile:
    try:
        end = _probe_end(tokenizer, tools, template_kwargs)
    except Exception:  # noqa: BLE001 - a template that refuses the probe gets full renders only
        return TemplateProfile(frozenset())
    verdicts: dict[frozenset[str], list[bool]] = {}
    for gap in _GAPS:
        for window in _WINDOWS:
            try:
                found = _probe_history(tokenizer, tools, template_kwargs, end, [gap, gap, window])
            except Exception:  # noqa: BLE001 - the template refused this history: it proves nothing
                continue
            for pattern, results in found.items():
                verdicts.setdefault(frozenset(pattern), []).extend(results)
    return TemplateProfile(frozenset(roles for roles, results in verdicts.items() if results and all(results)))


_profiles: weakref.WeakKeyDictionary[Any, dict[tuple[str, str, str], TemplateProfile]] = weakref.WeakKeyDictionary()
_profiles_lock = threading.Lock()


def template_profile(
    tokenizer: Any, tools: Sequence[Mapping[str, Any]] | None, template_kwargs: Mapping[str, Any]
) -> TemplateProfile:
    """The tokenizer's :class:`TemplateProfile` for these tools and template arguments (probed once, then cached)."""
    key = (
        str(getattr(tokenizer, "chat_template", None)),
        json.dumps(list(tools or []), sort_keys=True, default=str),
        json.dumps(dict(template_kwargs), sort_keys=True, default=str),
    )
    try:
        cached = _profiles.get(tokenizer)
    except TypeError:  # not weak-referenceable: probe every time rather than keep it alive
        return _learn_profile(tokenizer, tools, template_kwargs)
    if cached is not None and key in cached:
        return cached[key]
    profile = _learn_profile(tokenizer, tools, template_kwargs)
    with _profiles_lock:
        _profiles.setdefault(tokenizer, {})[key] = profile
    return profile
