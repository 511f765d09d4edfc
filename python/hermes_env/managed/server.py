"""The Phase-2 managed server: OpenAI-shaped chat completions over token-exact trajectories.

``ManagedServer`` wraps anything with atroposlib's ``tokens_and_logprobs_completion`` (a
``ServerManager``, ``VLLMServer``, ``SGLangServer``). Each ``chat_completion``:

1. finds the tracked branch the messages continue (its whole conversation, with the assistant
   replies this server returned, recognised by tool-call id or content);
2. renders the messages with the tokenizer's chat template (tools included), replaying every
   assistant reply it produced as the exact raw text the model emitted: a turn that continues a
   branch renders and tokenizes only what it adds, through the branch's window, when the template
   allows (``managed.rendering``), so a turn costs the same at 1k and 200k tokens;
3. extends that branch's ``Trajectory`` on token ids (``divergence_policy`` decides when the
   template changed earlier turns), and sends the trajectory's own tokens as the prompt;
4. records each sample's token ids and logprobs (``n > 1`` forks the branch), splits off
   ``<think>`` reasoning as ``reasoning_content`` and parses tool calls with
   ``hermes_env.parsers`` — no vLLM needed in this process. Each message carries the
   parser's issues as ``parse_issues`` (``kind``, ``offset``, ``message`` dicts).

A ``/generate`` call that fails or returns what no sampler could produce raises
``PolicyCallError`` before anything is recorded (:mod:`hermes_env.managed.reply_checks`).

The response is an ``openai`` ``ChatCompletion``, like atroposlib's ``ManagedServer`` returns.
"""

from __future__ import annotations

import copy
import itertools
import logging
import sys
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from openai.types.chat.chat_completion import ChatCompletion, Choice
from openai.types.completion import Completion
from openai.types.completion_choice import CompletionChoice
from openai.types.completion_usage import CompletionUsage
from pydantic import BaseModel, ConfigDict, Field

from hermes_env.managed.branches import (
    CompletionRecord,
    ManagedBranch,
    MessageKey,
    canonical,
    continues,
    keys_match,
)
from hermes_env.managed.rendering import RenderState, new_turn_text, render_text, template_profile, window_delta
from hermes_env.managed.reply_checks import generate
from hermes_env.managed.response import load_parser, parse_reply
from hermes_env.managed.tokenization import encode, tokenization
from hermes_env.trajectory import DivergencePolicy, Trajectory

logger = logging.getLogger(__name__)

_FINISH_REASONS = {"stop", "length", "tool_calls", "content_filter", "function_call"}
# OpenAI request fields that mean nothing to a token-level /generate call.
_DROPPED = {"model", "logprobs", "top_logprobs", "stream_options", "parallel_tool_calls", "user"}


class ManagedServerConfig(BaseModel):
    """Settings of a :class:`ManagedServer`."""

    model_config = ConfigDict(extra="forbid")

    tool_parser: str | None = Field(default="hermes", description="hermes_env.parsers name; None: no tool parsing")
    divergence_policy: DivergencePolicy = Field(
        default="raise", description="what to do when a re-rendered prompt changes earlier tokens"
    )
    chat_template_kwargs: dict[str, Any] = Field(
        default_factory=dict, description="extra apply_chat_template arguments (e.g. enable_thinking)"
    )
    model_name: str | None = Field(default=None, description="model name in responses; default: the server's")
    incremental_render: Literal["on", "off", "verify"] = Field(
        default="on",
        description="render only what each turn adds (on); always the whole conversation (off); both, raising "
        "when they differ (verify: for checking a new chat template)",
    )


def _server_attr(server: Any, name: str) -> Any:
    """An attribute of the server, or of a ServerManager's first server."""
    if hasattr(server, name):
        return getattr(server, name)
    servers = getattr(server, "servers", None)
    if servers:
        return getattr(servers[0], name, None)
    return None


def _as_dict(message: Any) -> dict[str, Any]:
    if isinstance(message, Mapping):
        return dict(message)
    dump = getattr(message, "model_dump", None)
    if callable(dump):
        return dump(exclude_none=True)
    raise TypeError(f"messages must be dicts or pydantic models, got {type(message).__name__}")


class ManagedServer:
    """Token-exact multi-turn chat completions; see the module docstring."""

    def __init__(
        self,
        server: Any,
        tokenizer: Any = None,
        *,
        tool_parser: str | None = "hermes",
        divergence_policy: DivergencePolicy = "raise",
        chat_template_kwargs: Mapping[str, Any] | None = None,
        model_name: str | None = None,
        incremental_render: Literal["on", "off", "verify"] = "on",
    ) -> None:
        if not callable(getattr(server, "tokens_and_logprobs_completion", None)):
            raise TypeError(
                f"{type(server).__name__} has no tokens_and_logprobs_completion; use an atroposlib ServerManager, "
                "VLLMServer or SGLangServer (OpenAI endpoints do not return token ids)"
            )
        self.config = ManagedServerConfig(
            tool_parser=tool_parser,
            divergence_policy=divergence_policy,
            chat_template_kwargs=dict(chat_template_kwargs or {}),
            model_name=model_name,
            incremental_render=incremental_render,
        )
        self.server = server
        self.tokenizer = tokenizer if tokenizer is not None else _server_attr(server, "tokenizer")
        if self.tokenizer is None:
            raise ValueError("no tokenizer: pass the model's Hugging Face tokenizer")
        config = _server_attr(server, "config")
        self.model_name = model_name or getattr(config, "model_name", None) or "managed"
        self._vocab_size = len(self.tokenizer)
        self._special_ids = set(getattr(self.tokenizer, "all_special_ids", []) or [])
        self._tokenization = tokenization(self.tokenizer)
        # A rollout sends the same tools and template arguments every turn: look them up once.
        self._parser = _LastResult(lambda name, tools: load_parser(name, tools))
        self._profile = _LastResult(lambda tools, kwargs, _template: template_profile(self.tokenizer, tools, kwargs))
        # How many prompts were rendered through a branch's window ("incremental") or whole ("full").
        self.render_counts: Counter[str] = Counter()
        self._branches: list[ManagedBranch] = []
        self._records: dict[int, CompletionRecord] = {}
        self._by_call_id: dict[str, int] = {}
        self._by_content: dict[str, list[int]] = {}
        self._next_cid = itertools.count()

    # -- public API ----------------------------------------------------------------------------

    async def chat_completion(
        self,
        *,
        messages: Sequence[Any],
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: Any = None,
        n: int = 1,
        **sampling: Any,
    ) -> ChatCompletion:
        """An OpenAI ``ChatCompletion`` for ``messages``; records each sample's exact tokens."""
        if sampling.pop("stream", False):
            raise ValueError("ManagedServer does not stream; call chat_completion without stream=True")
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"n must be a positive integer, got {n!r}")
        request = list(messages)
        if not request:
            raise ValueError("messages is empty; pass at least one message")
        template_kwargs = dict(self.config.chat_template_kwargs)
        template_kwargs.update(sampling.pop("chat_template_kwargs", None) or {})
        extra_body = dict(sampling.pop("extra_body", None) or {})
        template_kwargs.update(extra_body.pop("chat_template_kwargs", None) or {})
        params = {k: v for k, v in {**extra_body, **sampling}.items() if k not in _DROPPED}

        turn = self._prompt(request, tools, template_kwargs)
        refs = sys.getrefcount(turn.sent)
        try:
            outputs, logprobs, finishes = await self._generate(turn.sent, n, params)
            trajectories = turn.trajectories(outputs, logprobs, finishes)
        except BaseException:
            turn.release(sampled=False, kept=sys.getrefcount(turn.sent) > refs)
            raise
        turn.release(sampled=True, kept=sys.getrefcount(turn.sent) > refs)
        parser = self._parser(self.config.tool_parser, tools) if tools and tool_choice != "none" else None
        records = [self._record(ids, finish) for ids, finish in zip(outputs, finishes, strict=True)]
        choices = []
        for i, (record, trajectory) in enumerate(zip(records, trajectories, strict=True)):
            reply = parse_reply(record.raw_text, parser)
            message = reply.to_openai()  # carries reply.issues as `parse_issues` (read by HermesAgentLoop)
            finish = record.finish_reason
            reported = "tool_calls" if reply.tool_calls and finish == "stop" else finish
            choices.append(
                Choice(
                    index=i,
                    message=message,
                    finish_reason=reported if reported in _FINISH_REASONS else "stop",  # type: ignore[arg-type]
                    logprobs=None,
                )
            )
            dumped = message.model_dump(exclude_none=True)
            self._register(record, dumped)
            self._commit(turn, i, trajectory, record, dumped)
        completion_tokens = sum(len(r.token_ids) for r in records)
        return ChatCompletion(
            id=f"chatcmpl-{uuid.uuid4().hex}",
            created=int(time.time()),
            model=self.model_name,
            object="chat.completion",
            choices=choices,
            usage=CompletionUsage(
                prompt_tokens=len(turn.sent),
                completion_tokens=completion_tokens,
                total_tokens=len(turn.sent) + completion_tokens,
            ),
        )

    async def completion(self, *, prompt: str, n: int = 1, **sampling: Any) -> Completion:
        """A text completion (atroposlib ``ManagedServer.completion`` parity), tracked token-exactly.

        A prompt that starts with an earlier completion branch's text (its prompt + returned
        text) continues that branch: the branch's own tokens are kept and only the rest of the
        prompt is tokenized and appended.
        """
        if not isinstance(prompt, str):
            raise TypeError(f"prompt must be a str, got {type(prompt).__name__}")
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"n must be a positive integer, got {n!r}")
        params = {k: v for k, v in sampling.items() if k not in _DROPPED}
        branch = None
        for b in self._branches:
            if (
                b.text is not None
                and prompt.startswith(b.text)
                and (branch is None or len(b.text) > len(branch.text or ""))
            ):
                branch = b
        if branch is not None:
            traj = branch.trajectory.fork()
            traj.add_prompt(self._tokenization.encode(prompt[len(branch.text or "") :]))
        else:
            traj = Trajectory(vocab_size=self._vocab_size)
            traj.add_prompt(list(self.tokenizer.encode(prompt, add_special_tokens=True)))
        version = branch.version if branch is not None else -1
        sent = traj.tokens
        outputs, logprobs, finishes = await self._generate(sent, n, params)
        forks = [traj.fork() for _ in outputs[1:]]
        samples = list(zip([traj, *forks], outputs, finishes, strict=True))
        for (sample, ids, finish), lps in zip(samples[1:] + samples[:1], logprobs[1:] + logprobs[:1], strict=True):
            sample.add_completion(ids, lps, finish_reason=finish)
        completion_tokens = sum(len(ids) for ids in outputs)
        usage = CompletionUsage(
            prompt_tokens=len(sent), completion_tokens=completion_tokens, total_tokens=len(sent) + completion_tokens
        )
        choices = []
        for i, (sample, ids, finish) in enumerate(samples):
            text = self.tokenizer.decode(ids, skip_special_tokens=True)
            choices.append(
                CompletionChoice(
                    index=i, text=text, finish_reason=finish if finish in ("stop", "length") else "stop", logprobs=None
                )
            )
            if i == 0 and branch is not None and branch.version == version:
                branch.trajectory, branch.text = sample, prompt + text
                branch.version += 1
            else:
                self._branches.append(
                    ManagedBranch(trajectory=sample, messages=[], keys=[], decode=self._decode, text=prompt + text)
                )
        return Completion(
            id=f"cmpl-{uuid.uuid4().hex}",
            created=int(time.time()),
            model=self.model_name,
            object="text_completion",
            choices=choices,
            usage=usage,
        )

    def get_state(self) -> dict[str, Any]:
        """The tracked rollouts.

        ``branches``: one :class:`ManagedBranch` per branch (trajectory + messages so far);
        ``trajectories``: their ``Trajectory`` objects; ``nodes``: every trainable sequence,
        atroposlib-style (each branch, preceded by any sequences it closed under
        ``warn_and_restart``).
        """
        nodes: list[ManagedBranch] = []
        for b in self._branches:
            nodes.extend(b.restarted)
            nodes.append(b)
        return {
            "branches": list(self._branches),
            "trajectories": [b.trajectory for b in self._branches],
            "nodes": nodes,
        }

    def reset(self) -> None:
        """Forget every branch and recorded completion."""
        self._branches.clear()
        self._records.clear()
        self._by_call_id.clear()
        self._by_content.clear()

    # -- internals -----------------------------------------------------------------------------

    def _decode(self, ids: list[int]) -> str:
        return self._tokenization.decode(ids)

    def _key(self, message: Mapping[str, Any]) -> MessageKey:
        if message.get("role") == "assistant":
            calls = message.get("tool_calls") or []
            if calls:
                cids = {
                    self._by_call_id[c_id]
                    for c in calls
                    if isinstance(c, Mapping) and isinstance(c_id := c.get("id"), str) and c_id in self._by_call_id
                }
            else:
                cids = set(self._by_content.get(message.get("content") or "", ()))
            if cids:
                return ("generated", frozenset(cids))
        return ("message", canonical(message))

    def _find_branch(self, keys: list[MessageKey]) -> ManagedBranch | None:
        best: ManagedBranch | None = None
        for b in self._branches:
            if continues(b, keys) and (best is None or len(b.keys) > len(best.keys)):
                best = b
        return best

    def _template_messages(
        self, msgs: list[dict[str, Any]], keys: list[MessageKey], branch: ManagedBranch | None
    ) -> list[dict[str, Any]]:
        """The messages as the template should see them: our replies as raw model text, and a ``content`` of
        None as "" (as vLLM's server renders it; templates such as Qwen3's cannot render None)."""
        out = []
        for i, (m, k) in enumerate(zip(msgs, keys, strict=True)):
            if k[0] != "generated":
                out.append(m if m.get("content") is not None else {**m, "content": ""})
                continue
            cids: frozenset[int] = k[1]
            if branch is not None and i < len(branch.keys) and branch.keys[i][0] == "generated":
                cids = cids & branch.keys[i][1] or cids
            record = self._records[min(cids)]
            out.append({"role": "assistant", "content": record.raw_text})
        return out

    def _match(self, request: list[Any]) -> tuple[ManagedBranch | None, list[dict[str, Any]], list[MessageKey]]:
        """The branch ``request`` continues, its messages as dicts and their keys.

        A request normally repeats a branch's conversation and adds a few messages: its earlier
        messages are then compared with the (shallow) copies the branch kept of them (dict equality,
        no re-serialising) and only the reply since and the new messages are keyed. Anything else
        keys every message and matches on keys. A message edited in place is seen as edited unless
        only a value nested inside it (a list of content parts) was changed in place.
        """
        best: tuple[ManagedBranch, list[dict[str, Any]]] | None = None
        for b in self._branches:
            n = len(b.keys)
            if b.text is not None or not n or n >= len(request) or (best is not None and n <= len(best[0].keys)):
                continue
            seen = b.messages[: n - 1]
            if request[: n - 1] != seen:
                continue
            reply = _as_dict(request[n - 1])
            if keys_match(b.keys[n - 1], self._key(reply)):
                best = (b, [*seen, reply])
        if best is not None:
            branch, known = best
            new = [_as_dict(m) for m in request[len(known) :]]
            return branch, [*known, *new], [*branch.keys, *(self._key(m) for m in new)]
        msgs = [_as_dict(m) for m in request]
        keys = [self._key(m) for m in msgs]
        return self._find_branch(keys), msgs, keys

    def _prompt(
        self, request: list[Any], tools: Sequence[Mapping[str, Any]] | None, template_kwargs: Mapping[str, Any]
    ) -> _Turn:
        """The prompt for ``request``: rendered incrementally where the branch allows, in full otherwise."""
        branch, msgs, keys = self._match(request)
        mode = self.config.incremental_render
        if branch is not None and branch.render is not None and mode != "off":
            turn = self._incremental(branch, msgs, keys, tools, template_kwargs)
            if turn is not None:
                if mode == "verify":
                    self._verify(turn, tools, template_kwargs)
                self.render_counts["incremental"] += 1
                return turn
        self.render_counts["full"] += 1
        return self._full(branch, msgs, keys, tools, template_kwargs)

    def _incremental(
        self,
        branch: ManagedBranch,
        msgs: list[dict[str, Any]],
        keys: list[MessageKey],
        tools: Sequence[Mapping[str, Any]] | None,
        template_kwargs: Mapping[str, Any],
    ) -> _Turn | None:
        """The next turn rendered through the branch's window (managed.rendering); None: render in full."""
        state = branch.render
        new = msgs[len(branch.keys) :]
        if state is None:
            return None
        if not self._profile(tools, template_kwargs, getattr(self.tokenizer, "chat_template", None)).allows(new):
            return None
        delta = window_delta(self.tokenizer, state, new, tools, template_kwargs)
        if delta is None:
            return None
        text = state.tail_text + delta
        ids = self._tokenization.encode(text)
        held = state.tail_len
        # The tail re-tokenised must give the trajectory's own tokens (the last completion included).
        if len(ids) < held or not branch.trajectory.ends_with(ids[:held]):
            return None
        new_ids = ids[held:]
        sent, owned = self._send_list(branch, new_ids)
        return _Turn(
            branch=branch,
            version=branch.version,
            base=branch.trajectory,
            base_len=len(branch.trajectory),
            new_ids=new_ids,
            sent=sent,
            owned=owned,
            msgs=msgs,
            keys=keys,
            render=state,
            new_messages=new,
            delta=delta,
            head=(state.head_messages, state.head_text),
            tail=self._tokenization.tail(text, ids),
        )

    def _send_list(self, branch: ManagedBranch, new_ids: list[int]) -> tuple[list[int], bool]:
        """The prompt list to send: the branch's own token list extended in place, unless a request on it
        is in flight (then a copy). A list a server kept after its call is left to it."""
        committed = len(branch.trajectory)
        if branch.sending or len(branch.ids) != committed:
            return [*branch.ids[:committed], *new_ids], False
        if sys.getrefcount(branch.ids) > 2:  # the branch's reference and this call's argument
            branch.ids = list(branch.ids)
        branch.ids.extend(new_ids)
        branch.sending = True
        return branch.ids, True

    def _full(
        self,
        branch: ManagedBranch | None,
        msgs: list[dict[str, Any]],
        keys: list[MessageKey],
        tools: Sequence[Mapping[str, Any]] | None,
        template_kwargs: Mapping[str, Any],
    ) -> _Turn:
        """The prompt rendered and tokenized whole; a branch it continues is extended by the divergence policy."""
        template_msgs = self._template_messages(msgs, keys, branch)
        text = render_text(self.tokenizer, template_msgs, tools, template_kwargs)
        prompt_ids = self._tokenization.encode(text)
        state = branch.render if branch is not None else None
        head = (state.head_messages, state.head_text) if state is not None else (tuple(template_msgs), text)
        if branch is None:
            return _Turn(
                branch=None,
                version=-1,
                base=Trajectory(vocab_size=self._vocab_size),
                base_len=0,
                new_ids=prompt_ids,
                sent=list(prompt_ids),
                owned=False,
                msgs=msgs,
                keys=keys,
                head=head,
                tail=self._tokenization.tail(text, prompt_ids),
            )
        traj = branch.trajectory.fork()
        turn_text = turn_ids = None
        if self.config.divergence_policy == "keep_raw" and traj.divergence(prompt_ids) is not None:
            last = self._records[branch.completion_ids[-1]]
            turn_text = new_turn_text(
                self.tokenizer, template_msgs, len(branch.keys) - 1, tools, template_kwargs, last.produced_end
            )
            turn_ids = self._tokenization.encode(turn_text)
        out = traj.extend(prompt_ids, self.config.divergence_policy, new_turn=turn_ids, decode=self._decode)
        if out["outcome"] == "kept_raw" and turn_text is not None and turn_ids is not None:
            logger.info(
                "keep_raw: template re-rendered earlier turns differently at token %d", out["divergence"]["index"]
            )
            before = (state.tail_text, state.tail_len) if state is not None else ("", 0)
            tail = self._tokenization.tail(turn_text, turn_ids, before)
        else:
            tail = self._tokenization.tail(text, prompt_ids)
        return _Turn(
            branch=branch,
            version=branch.version,
            base=traj,
            base_len=len(traj),
            new_ids=[],
            sent=traj.tokens,
            owned=False,
            msgs=msgs,
            keys=keys,
            previous=out["previous"],
            head=head,
            tail=tail,
        )

    def _verify(
        self, turn: _Turn, tools: Sequence[Mapping[str, Any]] | None, template_kwargs: Mapping[str, Any]
    ) -> None:
        """``incremental_render="verify"``: the incremental prompt must be the full render's, token for token."""
        template_msgs = self._template_messages(turn.msgs, turn.keys, turn.branch)
        full = encode(self.tokenizer, render_text(self.tokenizer, template_msgs, tools, template_kwargs))
        if full != turn.sent:
            turn.release(sampled=False)
            at = next((i for i, (a, b) in enumerate(zip(full, turn.sent, strict=False)) if a != b), None)
            at = min(len(full), len(turn.sent)) if at is None else at
            raise RuntimeError(
                f"incremental rendering differs from a full render at token {at} (full render {len(full)} tokens, "
                f"incremental {len(turn.sent)}); the chat template renders this conversation in a way the window "
                "check does not catch: use incremental_render='off' and report the template"
            )

    async def _generate(
        self, sent: list[int], n: int, params: Mapping[str, Any]
    ) -> tuple[list[list[int]], list[list[float]], list[str]]:
        """Sends the prompt ids; the samples' token ids, logprobs and finish reasons, checked before anything
        is recorded (a failed or impossible reply raises ``PolicyCallError``; see ``managed.reply_checks``)."""
        reply = await generate(self.server, sent, n, params, self._vocab_size)
        return reply.outputs, reply.logprobs, reply.finish_reasons

    def _record(self, ids: list[int], finish: str) -> CompletionRecord:
        produced_end = None
        body = ids
        if ids and ids[-1] in self._special_ids:
            produced_end = self._tokenization.texts.get(ids[-1]) or self._decode(ids[-1:])
            body = ids[:-1]
        record = CompletionRecord(
            cid=next(self._next_cid),
            token_ids=tuple(self._tokenization.intern(ids)),
            raw_text=self._decode(body),
            produced_end=produced_end,
            finish_reason=finish,
        )
        self._records[record.cid] = record
        return record

    def _register(self, record: CompletionRecord, message: Mapping[str, Any]) -> None:
        calls = message.get("tool_calls") or []
        for c in calls:
            self._by_call_id[c["id"]] = record.cid
        if not calls:
            self._by_content.setdefault(message.get("content") or "", []).append(record.cid)

    def _commit(
        self, turn: _Turn, index: int, traj: Trajectory, record: CompletionRecord, reply: dict[str, Any]
    ) -> None:
        """Stores sample ``index``: it continues its branch (sample 0, when nothing else did) or opens one."""
        raw = {"role": "assistant", "content": record.raw_text}
        completion = (record.raw_text + (record.produced_end or ""), len(record.token_ids))
        if turn.render is not None and turn.delta is not None:
            render = turn.render.advanced(turn.new_messages, turn.delta, raw, completion, turn.tail)
        else:
            render = RenderState.first(turn.head[0], turn.head[1], raw, completion, turn.tail)
        keys = [*turn.keys, ("generated", frozenset({record.cid}))]
        messages = [*turn.msgs, reply]
        base = turn.branch
        if index == 0 and base is not None and base.version == turn.version:
            if turn.previous is not None:
                closed = ManagedBranch(
                    trajectory=turn.previous,
                    messages=list(base.messages),
                    keys=list(base.keys),
                    completion_ids=list(base.completion_ids),
                    decode=self._decode,
                )
                base.restarted.append(closed)
            base.trajectory = traj
            base.ids = turn.ids_after(index, record)
            base.messages = messages
            base.keys = keys
            base.completion_ids.append(record.cid)
            base.render = render
            base.version += 1
            return
        parent_cids = list(base.completion_ids) if base is not None else []
        self._branches.append(
            ManagedBranch(
                trajectory=traj,
                messages=messages,
                keys=keys,
                completion_ids=[*parent_cids, record.cid],
                decode=self._decode,
                render=render,
                ids=turn.ids_after(index, record),
            )
        )


class _LastResult:
    """``fn(*args)``, computed again only when the arguments differ from the last call's (compared with a
    deep copy of them, so arguments changed in place are seen as changed)."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.args: tuple[Any, ...] | None = None
        self.result: Any = None

    def __call__(self, *args: Any) -> Any:
        if self.args is None or args != self.args:
            self.result = self.fn(*args)
            self.args = copy.deepcopy(args)
        return self.result


@dataclass(eq=False)
class _Turn:
    """One chat request's prompt: what it continues, what it sends, and how its samples are stored.

    The samples' trajectories are ``base``'s first ``base_len`` tokens, then ``new_ids`` (the new
    prompt tokens), then the sample. Sample 0 extends ``base`` in place when ``base`` is the
    branch's trajectory and nothing else extended it meanwhile (so a turn costs O(new tokens));
    other samples are copies.
    """

    branch: ManagedBranch | None
    version: int
    base: Trajectory
    base_len: int
    new_ids: list[int]
    sent: list[int]  # the whole prompt, as sent
    owned: bool  # sent is the branch's own token list, extended in place for this request
    msgs: list[dict[str, Any]]
    keys: list[MessageKey]
    head: tuple[tuple[Mapping[str, Any], ...], str]
    tail: tuple[str, int]
    previous: Trajectory | None = None  # warn_and_restart: the sequence it closed
    render: RenderState | None = None  # incremental turns: the branch's state, the new messages and their text
    new_messages: list[dict[str, Any]] = field(default_factory=list)
    delta: str | None = None
    _in_place: bool = False

    def __post_init__(self) -> None:
        self.prompt_len = len(self.sent)

    def release(self, sampled: bool, kept: bool = False) -> None:
        """After the server call: an owned list goes back to its branch (cut back when nothing was sampled).

        ``kept``: the server held on to the list it was sent, so it keeps that one and the branch
        continues on a copy (a list handed out is never changed afterwards).
        """
        if self.owned and self.branch is not None:
            if not sampled and kept:
                self.branch.ids = self.sent[: self.base_len]
            elif not sampled:
                del self.sent[self.base_len :]
            elif kept:
                self.sent = list(self.sent)
                if self._in_place:
                    self.branch.ids = self.sent
            self.branch.sending = False

    def trajectories(
        self, outputs: list[list[int]], logprobs: list[list[float]], finishes: list[str]
    ) -> list[Trajectory]:
        """Each sample's trajectory, every one checked before anything tracked changes."""
        samples: list[Trajectory] = []
        for ids, lps, finish in list(zip(outputs, logprobs, finishes, strict=True))[1:]:
            t = self.base.fork(self.base_len)
            t.add_turn(self.new_ids, ids, lps, finish)
            samples.append(t)
        branch = self.branch
        shared = branch is not None and self.base is branch.trajectory
        self._in_place = not shared or (branch is not None and branch.version == self.version)
        first = self.base if self._in_place else self.base.fork(self.base_len)
        first.add_turn(self.new_ids, outputs[0], logprobs[0], finishes[0])
        return [first, *samples]

    def ids_after(self, index: int, record: CompletionRecord) -> list[int]:
        """The token list of sample ``index``'s trajectory (the sent list itself, extended, for sample 0)."""
        if index == 0 and self.owned and self._in_place:
            self.sent.extend(record.token_ids)
            return self.sent
        return [*self.sent[: self.prompt_len], *record.token_ids]


@asynccontextmanager
async def managed_server(
    server: Any,
    tokenizer: Any = None,
    tool_parser: str | None = "hermes",
    divergence_policy: DivergencePolicy = "raise",
    **kwargs: Any,
) -> AsyncIterator[ManagedServer]:
    """``async with managed_server(server_manager, tokenizer) as m:`` — state is cleared on exit."""
    managed = ManagedServer(server, tokenizer, tool_parser=tool_parser, divergence_policy=divergence_policy, **kwargs)
    try:
        yield managed
    finally:
        managed.reset()
