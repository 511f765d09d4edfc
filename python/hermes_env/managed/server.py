"""The Phase-2 managed server (DESIGN.md §3): OpenAI-shaped chat completions over token-exact trajectories.

``ManagedServer`` wraps anything with atroposlib's ``tokens_and_logprobs_completion`` (a
``ServerManager``, ``VLLMServer``, ``SGLangServer``). Each ``chat_completion``:

1. finds the tracked branch the messages continue (its whole conversation, with the assistant
   replies this server returned, recognised by tool-call id or content);
2. renders the messages with the tokenizer's chat template (tools included), replaying every
   assistant reply it produced as the exact raw text the model emitted;
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

import itertools
import logging
import time
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import numpy as np
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
)
from hermes_env.managed.rendering import EncodedPrefix, encode, encode_incremental, new_turn_ids, render_text
from hermes_env.managed.reply_checks import generate
from hermes_env.managed.response import load_parser, parse_reply
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
        )
        self.server = server
        self.tokenizer = tokenizer if tokenizer is not None else _server_attr(server, "tokenizer")
        if self.tokenizer is None:
            raise ValueError("no tokenizer: pass the model's Hugging Face tokenizer")
        config = _server_attr(server, "config")
        self.model_name = model_name or getattr(config, "model_name", None) or "managed"
        self._vocab_size = len(self.tokenizer)
        self._special_ids = set(getattr(self.tokenizer, "all_special_ids", []) or [])
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
        msgs = [_as_dict(m) for m in messages]
        if not msgs:
            raise ValueError("messages is empty; pass at least one message")
        template_kwargs = dict(self.config.chat_template_kwargs)
        template_kwargs.update(sampling.pop("chat_template_kwargs", None) or {})
        extra_body = dict(sampling.pop("extra_body", None) or {})
        template_kwargs.update(extra_body.pop("chat_template_kwargs", None) or {})
        params = {k: v for k, v in {**extra_body, **sampling}.items() if k not in _DROPPED}

        keys = [self._key(m) for m in msgs]
        branch = self._find_branch(keys)
        template_msgs = self._template_messages(msgs, keys, branch)
        text = render_text(self.tokenizer, template_msgs, tools, template_kwargs)
        cache = branch.encoded if branch is not None else None
        prompt_ids, encoded = encode_incremental(self.tokenizer, text, cache, self._special_ids)
        traj, previous = self._prompt_trajectory(branch, prompt_ids, template_msgs, tools, template_kwargs)
        version = branch.version if branch is not None else -1
        parent_cids = list(branch.completion_ids) if branch is not None else []

        samples, usage = await self._sample(traj, n, params)
        parser = load_parser(self.config.tool_parser, tools) if tools and tool_choice != "none" else None
        choices = []
        for i, (sample, ids, finish) in enumerate(samples):
            record = self._record(ids, finish)
            reply = parse_reply(record.raw_text, parser)
            message = reply.to_openai()  # carries reply.issues as `parse_issues` (read by HermesAgentLoop)
            reported = "tool_calls" if reply.tool_calls and finish == "stop" else finish
            choices.append(
                Choice(
                    index=i,
                    message=message,
                    finish_reason=reported if reported in _FINISH_REASONS else "stop",  # type: ignore[arg-type]
                    logprobs=None,
                )
            )
            self._register(record, message.model_dump(exclude_none=True))
            base = branch if i == 0 else None
            self._commit(base, version, sample, msgs, keys, parent_cids, record, message, previous, encoded)
        return ChatCompletion(
            id=f"chatcmpl-{uuid.uuid4().hex}",
            created=int(time.time()),
            model=self.model_name,
            object="chat.completion",
            choices=choices,
            usage=usage,
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
            traj.add_prompt(encode(self.tokenizer, prompt[len(branch.text or "") :]))
        else:
            traj = Trajectory(vocab_size=self._vocab_size)
            traj.add_prompt(list(self.tokenizer.encode(prompt, add_special_tokens=True)))
        version = branch.version if branch is not None else -1
        samples, usage = await self._sample(traj, n, params)
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
        return self.tokenizer.decode(ids, skip_special_tokens=False)

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
        """The messages as the template should see them: our replies as raw model text."""
        out = []
        for i, (m, k) in enumerate(zip(msgs, keys, strict=True)):
            if k[0] != "generated":
                out.append(m)
                continue
            cids: frozenset[int] = k[1]
            if branch is not None and i < len(branch.keys) and branch.keys[i][0] == "generated":
                cids = cids & branch.keys[i][1] or cids
            record = self._records[min(cids)]
            out.append({"role": "assistant", "content": record.raw_text})
        return out

    def _prompt_trajectory(
        self,
        branch: ManagedBranch | None,
        prompt_ids: np.ndarray,
        template_msgs: list[dict[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None,
        template_kwargs: Mapping[str, Any],
    ) -> tuple[Trajectory, Trajectory | None]:
        """A new trajectory holding exactly the prompt to send (the branch is untouched)."""
        if branch is None:
            traj = Trajectory(vocab_size=self._vocab_size)
            traj.add_prompt(prompt_ids)
            return traj, None
        traj = branch.trajectory.fork()
        new_turn = None
        policy = self.config.divergence_policy
        if policy == "keep_raw" and traj.divergence(prompt_ids) is not None:
            last = self._records[branch.completion_ids[-1]]
            new_turn = new_turn_ids(
                self.tokenizer, template_msgs, len(branch.keys) - 1, tools, template_kwargs, last.produced_end
            )
        out = traj.extend(prompt_ids, policy, new_turn=new_turn, decode=self._decode)
        if out["outcome"] == "kept_raw":
            logger.info(
                "keep_raw: template re-rendered earlier turns differently at token %d", out["divergence"]["index"]
            )
        return traj, out["previous"]

    async def _sample(
        self, traj: Trajectory, n: int, params: Mapping[str, Any]
    ) -> tuple[list[tuple[Trajectory, list[int], str]], CompletionUsage]:
        """Sends ``traj``'s tokens and appends each returned sample to its own fork of ``traj``.

        Returns (trajectory, token ids, finish reason) per sample, sample 0 on ``traj`` itself, and
        the usage. ``traj`` is a fresh prompt trajectory, so a reply that does not line up raises
        before any tracked branch changes; a failed or impossible reply raises ``PolicyCallError``
        (:mod:`hermes_env.managed.reply_checks`).
        """
        sent = traj.tokens
        reply = await generate(self.server, sent, n, params, self._vocab_size)
        # Fork before appending: every sample continues the same prompt.
        forks = [traj] + [traj.fork() for _ in range(len(reply.outputs) - 1)]
        samples = []
        for sample, ids, lps, finish in zip(forks, reply.outputs, reply.logprobs, reply.finish_reasons, strict=True):
            sample.add_completion(ids, lps, finish_reason=finish)
            samples.append((sample, ids, finish))
        completion_tokens = sum(len(ids) for _, ids, _ in samples)
        usage = CompletionUsage(
            prompt_tokens=len(sent), completion_tokens=completion_tokens, total_tokens=len(sent) + completion_tokens
        )
        return samples, usage

    def _record(self, ids: Sequence[int], finish: str) -> CompletionRecord:
        ids = [int(t) for t in ids]
        produced_end = None
        body = ids
        if ids and ids[-1] in self._special_ids:
            produced_end = self._decode(ids[-1:])
            body = ids[:-1]
        record = CompletionRecord(
            cid=next(self._next_cid),
            token_ids=tuple(ids),
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
        self,
        base: ManagedBranch | None,
        version: int,
        traj: Trajectory,
        msgs: list[dict[str, Any]],
        keys: list[MessageKey],
        parent_cids: list[int],
        record: CompletionRecord,
        message: Any,
        previous: Trajectory | None,
        encoded: EncodedPrefix | None,
    ) -> None:
        """Stores a sample: it replaces ``base`` (sample 0 continuing a branch) or opens a new branch."""
        reply = message.model_dump(exclude_none=True)
        new_keys = [*keys, ("generated", frozenset({record.cid}))]
        if base is not None and base.version == version:
            if previous is not None:
                closed = ManagedBranch(
                    trajectory=previous,
                    messages=list(base.messages),
                    keys=list(base.keys),
                    completion_ids=list(base.completion_ids),
                    decode=self._decode,
                )
                base.restarted.append(closed)
            base.trajectory = traj
            base.messages = [*msgs, reply]
            base.keys = new_keys
            base.completion_ids.append(record.cid)
            base.encoded = encoded
            base.version += 1
            return
        completion_ids = [*parent_cids, record.cid]
        self._branches.append(
            ManagedBranch(
                trajectory=traj,
                messages=[*msgs, reply],
                keys=new_keys,
                completion_ids=completion_ids,
                decode=self._decode,
                encoded=encoded,
            )
        )


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
