"""A SCRIPTED stand-in for a vLLM server: no model, answers from a script of completion texts.

It speaks the ``/generate`` protocol exactly as atroposlib 0.4.0's ``VLLMServer`` calls it
(the custom API server of atropos's ``example_trainer``), plus ``/health``, and answers
``/v1/chat/completions`` from the same script, as ``vllm serve`` does (what ``VLLMServer.chat_completion``
calls; the chat template renders the prompt, calls come back as OpenAI ``tool_calls``):

- request: ``POST /generate`` with JSON ``{"prompt": {"prompt_token_ids": [...]}, "logprobs": 0,
  "n": ..., "max_tokens": ..., <other sampling params>}`` (a plain string prompt also works);
- response: ``{"text": [...], "prompt": str, "finish_reasons": [...], "logprobs":
  [[[{"<id>": logprob}], ...], ...], "prompt_token_ids": [...], "token_ids": [[...], ...]}``,
  one entry per sample; ``logprobs`` / ``token_ids`` only when the request asked for logprobs.

Each completion text comes from ``responder(request)`` and is tokenized with the real
tokenizer; a completion that stops normally ends with the tokenizer's EOS id (as vLLM returns
it), one cut by ``max_tokens`` has ``finish_reason="length"`` and no EOS. Logprobs are a fixed
function of (token id, position), so tests can check they line up.

Usage::

    with ScriptedVLLMServer(tokenizer, ["first reply", "second reply"]) as srv:
        config = srv.server_config()   # atroposlib APIServerConfig(server_type="vllm", ...)
        ...

``responder`` is a callable ``(ScriptedRequest) -> str | ScriptedCompletion | ScriptedFault`` or a
sequence of texts served in order. ``KeyedScript`` serves one script per conversation, ``TurnScript`` the
same script to every conversation.

Faults, for testing what a client does with a server that misbehaves: a responder may return a
``ScriptedFault`` instead of an answer, and ``FaultAtTurn(responder, kind, turn=k)`` does so on
the k-th model turn of the conversations it selects. The kinds (``FAULT_KINDS``): ``http_500``,
``non_json`` (a 200 whose body is not JSON), ``missing_logprobs``, ``empty_logprob_entry``,
``negative_token_id``, ``out_of_vocab_token_id``, ``nan_logprob``, ``positive_logprob``,
``bad_finish_reason``, ``empty_completion``, ``abort`` (vLLM's aborted request),
``drop_connection`` (the socket is closed without an answer), ``slow`` (the normal answer after
``seconds``) and ``hang`` (no answer for ``seconds``, by default until the server stops).

Command line (127.0.0.1, port 9000 by default, the bundled Qwen3 tokenizer)::

    python -m hermes_env.testing.scripted_vllm --policy terminal_tasks   # answers terminal_tasks' tasks
    python -m hermes_env.testing.scripted_vllm --policy replay:turns.json  # turns per prompt pattern (testing.replay)
    python -m hermes_env.testing.scripted_vllm --turns replies.json      # turn i of every conversation: text i
    python -m hermes_env.testing.scripted_vllm --texts replies.json --cycle   # texts in order, wrapping
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from aiohttp import web

from hermes_env.testing.http_thread import ThreadedHTTPServer
from hermes_env.testing.policies import POLICY_HELP

__all__ = [
    "FAULT_KINDS",
    "FaultAtTurn",
    "KeyedScript",
    "ScriptedCompletion",
    "ScriptedFault",
    "ScriptedRequest",
    "ScriptedVLLMServer",
    "TurnScript",
    "scripted_logprob",
    "scripted_prompt_logprobs",
]

FaultKind = Literal[
    "http_500",
    "non_json",
    "missing_logprobs",
    "empty_logprob_entry",
    "negative_token_id",
    "out_of_vocab_token_id",
    "nan_logprob",
    "positive_logprob",
    "bad_finish_reason",
    "empty_completion",
    "abort",
    "drop_connection",
    "slow",
    "hang",
]
FAULT_KINDS: tuple[FaultKind, ...] = get_args(FaultKind)


@dataclass(frozen=True)
class ScriptedRequest:
    """One sample the responder must answer (a request with ``n=3`` gives three, ``index`` 0..2)."""

    prompt_token_ids: list[int]
    prompt_text: str  # decoded with special tokens kept
    index: int
    n: int
    params: dict[str, Any]  # the sampling parameters as sent (max_tokens, temperature, stop, ...)


@dataclass(frozen=True)
class ScriptedCompletion:
    """Full control over one sample: explicit token ids (e.g. a non-canonical tokenization)."""

    text: str | None = None
    token_ids: list[int] | None = None
    finish_reason: str = "stop"
    logprobs: list[float] | None = None


@dataclass(frozen=True)
class ScriptedFault:
    """Answer a request wrongly on purpose (see the module docstring for the kinds).

    ``answer`` is what the server would have said; corrupting faults (``nan_logprob``, ...) damage
    it at ``position``, ``slow`` sends it after ``seconds``. ``hang`` holds the request ``seconds``
    (0: until the server stops) and then answers 503.
    """

    kind: FaultKind
    answer: str | ScriptedCompletion = ""
    seconds: float = 0.0
    position: int = 0

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}; use one of {', '.join(FAULT_KINDS)}")


Responder = Callable[[ScriptedRequest], "str | ScriptedCompletion | ScriptedFault"]


@dataclass
class FaultAtTurn:
    """A responder that answers with a ``kind`` fault on model turn ``turn`` (0: the first) of the
    conversations ``when`` selects (default: all), and like ``responder`` otherwise.

    The turn is the number of assistant turns already in the prompt, counted with ``turn_marker``
    (ChatML's assistant header by default), so retries of a failed request fail the same way.
    """

    responder: Responder
    kind: FaultKind
    turn: int = 1
    when: Callable[[ScriptedRequest], bool] | None = None
    seconds: float = 0.0
    position: int = 0
    turn_marker: str = "<|im_start|>assistant"

    def __call__(self, request: ScriptedRequest) -> str | ScriptedCompletion | ScriptedFault:
        answer = self.responder(request)
        turn = request.prompt_text.count(self.turn_marker) - 1
        if turn != self.turn or (self.when is not None and not self.when(request)) or isinstance(answer, ScriptedFault):
            return answer
        return ScriptedFault(self.kind, answer=answer, seconds=self.seconds, position=self.position)


def scripted_logprob(token_id: int, position: int) -> float:
    """The logprob the server reports for ``token_id`` at output ``position``: in (-1, 0]."""
    return -((token_id * 7919 + position * 104729) % 1000) / 1000.0


@dataclass
class KeyedScript:
    """One script per conversation: the key is a text the prompt contains (e.g. the task).

    The turn within a script is the number of finished assistant turns in the prompt, counted
    with ``turn_marker`` (ChatML's assistant header by default), so ``n > 1`` forks and
    restarted conversations read the same script positions.
    """

    scripts: Mapping[str, Sequence[str]]
    turn_marker: str = "<|im_start|>assistant"

    def __call__(self, request: ScriptedRequest) -> str:
        matches = [k for k in self.scripts if k in request.prompt_text]
        if len(matches) != 1:
            raise LookupError(f"prompt matches {len(matches)} script keys ({matches[:3]}); expected exactly one")
        script = self.scripts[matches[0]]
        turn = request.prompt_text.count(self.turn_marker) - 1
        if not 0 <= turn < len(script):
            raise LookupError(f"script {matches[0]!r} has {len(script)} turns; the prompt asks for turn {turn}")
        return script[turn]


@dataclass
class TurnScript:
    """The same script for every conversation: its i-th model turn gets ``texts[i]`` (the last text repeats).

    Turns are counted like :class:`KeyedScript`'s, so concurrent conversations never share a position.
    """

    texts: Sequence[str]
    turn_marker: str = "<|im_start|>assistant"

    def __call__(self, request: ScriptedRequest) -> str:
        if not self.texts:
            raise LookupError("the turn script is empty")
        turn = max(request.prompt_text.count(self.turn_marker) - 1, 0)
        return self.texts[min(turn, len(self.texts) - 1)]


class _SequenceResponder:
    def __init__(self, texts: Sequence[str | ScriptedCompletion], cycle: bool) -> None:
        self._texts = list(texts)
        self._cycle = cycle
        self._next = 0
        self._lock = threading.Lock()

    def __call__(self, request: ScriptedRequest) -> str | ScriptedCompletion:
        with self._lock:
            if self._next >= len(self._texts):
                if not self._cycle or not self._texts:
                    raise LookupError(f"the script's {len(self._texts)} completions are used up")
                self._next = 0
            text = self._texts[self._next]
            self._next += 1
            return text


@dataclass
class _Sample:
    text: str
    token_ids: list[int]
    logprobs: list[float]
    finish_reason: str


@dataclass
class RecordedRequest:
    body: dict[str, Any]
    samples: list[_Sample] = field(default_factory=list)


class ScriptedVLLMServer(ThreadedHTTPServer):
    """Scripted (no model) HTTP server on 127.0.0.1 speaking vLLM's ``/generate`` as atroposlib uses it.

    ``tokenizer``: a Hugging Face tokenizer (completions are tokenized with it).
    ``responder``: ``(ScriptedRequest) -> str | ScriptedCompletion``, or a sequence of texts /
    ``ScriptedCompletion`` served in order (``cycle=True`` to wrap around).
    ``port=0`` picks a free port. Start with ``start()`` or ``with``; ``requests`` records what
    was asked and answered: the last ``max_recorded`` requests (a long run against this server, a demo or a
    soak, would otherwise keep every prompt it was sent).
    """

    server_name = "ScriptedVLLMServer"

    def __init__(
        self,
        tokenizer: Any,
        responder: Responder | Sequence[str | ScriptedCompletion],
        *,
        port: int = 0,
        model_name: str = "scripted",
        cycle: bool = False,
        logprob_fn: Callable[[int, int], float] = scripted_logprob,
        max_recorded: int = 1000,
    ) -> None:
        super().__init__(port=port)
        self.max_recorded = max_recorded
        self.tokenizer = tokenizer
        if callable(responder):
            self._responder: Responder = responder
        elif isinstance(responder, Sequence) and not isinstance(responder, str):
            self._responder = _SequenceResponder(responder, cycle)
        else:
            raise TypeError("responder must be a callable (ScriptedRequest) -> str or a sequence of completion texts")
        self.model_name = model_name
        self.logprob_fn = logprob_fn
        self.requests: list[RecordedRequest] = []
        self.faults: list[FaultKind] = []  # every fault served, in order
        self._release: asyncio.Event | None = None  # set on stop: hung requests end
        self._tool_parser: str | None = None

    def stop(self) -> None:
        """Release hung requests, then stop serving."""
        loop, release = self._loop, self._release
        if loop is not None and release is not None and not loop.is_closed():
            loop.call_soon_threadsafe(release.set)
        super().stop()

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` (where ``/generate`` and ``/health`` live)."""
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL atroposlib configs expect (``VLLMServer`` strips ``/v1``)."""
        return f"{self.url}/v1"

    def server_config(self, **overrides: Any) -> Any:
        """An atroposlib ``APIServerConfig`` pointing ``VLLMServer`` at this server."""
        from atroposlib.envs.server_handling.server_baseline import APIServerConfig

        fields: dict[str, Any] = {
            "server_type": "vllm",
            "base_url": self.base_url,
            "api_key": "scripted",  # the openai client refuses an empty key; the server ignores it
            "model_name": self.model_name,
            "tokenizer_name": str(getattr(self.tokenizer, "name_or_path", "none")),
            "timeout": 30,
        }
        fields.update(overrides)
        return APIServerConfig(**fields)

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get("/health", self._health)
        app.router.add_post("/generate", self._generate)
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/v1/chat/completions", self._chat)

    # -- handlers ----------------------------------------------------------------------------

    async def _health(self, _request: web.Request) -> web.Response:
        return web.Response(status=200)

    async def _models(self, _request: web.Request) -> web.Response:
        return web.json_response(
            {"object": "list", "data": [{"id": self.model_name, "object": "model", "owned_by": "scripted"}]}
        )

    @property
    def tool_parser(self) -> str:
        """The tool-call format of the tokenizer's chat template (``hermes`` when it names none)."""
        if self._tool_parser is None:
            from hermes_env.parsers import detect_parser

            try:
                self._tool_parser = detect_parser(self.tokenizer)
            except (ValueError, TypeError):
                self._tool_parser = "hermes"
        return self._tool_parser

    async def _chat(self, request: web.Request) -> web.Response:
        """``/v1/chat/completions`` as vLLM's OpenAI server answers it (what atroposlib's ``VLLMServer.chat_completion``
        calls): the conversation rendered with the chat template, answered by the same responder as ``/generate``,
        tool calls parsed in the template's format. Faults are ``/generate``'s only; here a fault's answer is sent."""
        from hermes_env.testing.scripted_openai import chat_choice
        from hermes_env.trajectory import render_chat

        try:
            body = await request.json()
        except json.JSONDecodeError as e:
            return web.json_response({"error": {"message": f"request body is not JSON: {e}"}}, status=400)
        messages = body.get("messages") if isinstance(body, dict) else None
        if not isinstance(messages, list) or not messages:
            return web.json_response({"error": {"message": "messages must be a non-empty list"}}, status=400)
        tools = body.get("tools") or None
        try:
            prompt_text = render_chat(
                self.tokenizer, _template_messages(messages), True, **({"tools": tools} if tools else {})
            )
        except Exception as e:  # noqa: BLE001 - a template that cannot render the request is the client's 400
            message = f"the chat template cannot render these messages: {type(e).__name__}: {e}"
            return web.json_response({"error": {"message": message}}, status=400)
        try:
            prompt_ids = list(self.tokenizer.encode(prompt_text, add_special_tokens=False))
            params = {k: v for k, v in body.items() if k not in ("messages", "tools")}
            n = int(params.get("n") or 1)
            max_tokens = params.get("max_tokens") or params.get("max_completion_tokens")
            record = RecordedRequest(body=body)
            for index in range(n):
                answer = self._responder(ScriptedRequest(prompt_ids, prompt_text, index, n, params))
                if isinstance(answer, ScriptedFault):
                    answer = answer.answer
                record.samples.append(self._sample(answer, max_tokens))
        except (LookupError, ValueError, TypeError) as e:
            return web.json_response({"error": {"message": f"{type(e).__name__}: {e}"}}, status=400)
        self.requests.append(record)
        choices = [
            chat_choice(i, sample.text, tools, self.tool_parser, sample.finish_reason)
            for i, sample in enumerate(record.samples)
        ]
        completion_tokens = sum(len(sample.token_ids) for sample in record.samples)
        return web.json_response(
            {
                "id": f"chatcmpl-scripted-{len(self.requests)}",
                "object": "chat.completion",
                "created": 0,
                "model": body.get("model") or self.model_name,
                "choices": choices,
                "usage": {
                    "prompt_tokens": len(prompt_ids),
                    "completion_tokens": completion_tokens,
                    "total_tokens": len(prompt_ids) + completion_tokens,
                },
            }
        )

    async def _generate(self, request: web.Request) -> web.Response:
        try:
            body = await request.json()
        except json.JSONDecodeError as e:
            return web.json_response({"error": f"request body is not JSON: {e}"}, status=400)
        if not isinstance(body, dict) or "prompt" not in body:
            return web.json_response({"error": "request needs a 'prompt' field"}, status=400)
        try:
            out, fault = self._answer(body)
        except (LookupError, ValueError, TypeError) as e:
            return web.json_response({"error": f"{type(e).__name__}: {e}"}, status=400)
        if fault is None:
            return web.json_response(out)
        self.faults.append(fault.kind)
        return await self._faulty_response(request, out, fault)

    async def _faulty_response(self, request: web.Request, out: dict[str, Any], fault: ScriptedFault) -> web.Response:
        kind = fault.kind
        if kind == "http_500":
            return web.json_response({"error": "scripted internal server error"}, status=500)
        if kind == "non_json":
            return web.Response(status=200, text="<html>502 Bad Gateway (scripted)</html>", content_type="text/html")
        if kind == "drop_connection":
            if request.transport is not None:
                request.transport.close()
            return web.Response(status=500)  # never reaches the client: the socket is closed
        if kind == "slow":
            await asyncio.sleep(fault.seconds)
            return web.json_response(out)
        if kind == "hang":
            if self._release is None:
                self._release = asyncio.Event()
            waiter = asyncio.ensure_future(self._release.wait())
            try:
                await asyncio.wait_for(waiter, fault.seconds or None)
            except TimeoutError:
                pass
            return web.json_response({"error": "scripted hang ended"}, status=503)
        # The rest damage the first sample of a 200 answer.
        if kind == "missing_logprobs":
            out.pop("logprobs", None)
        elif kind == "bad_finish_reason":
            out["finish_reasons"][0] = "banana"
        elif kind == "abort":
            out["finish_reasons"][0] = "abort"
        elif kind == "empty_completion":
            out["text"][0], out["logprobs"][0], out["token_ids"][0] = "", [], []
        else:
            entries = out["logprobs"][0]
            at = min(fault.position, len(entries) - 1)
            (tid, lp) = next(iter(entries[at][0].items()))
            if kind == "empty_logprob_entry":
                entries[at] = []
            elif kind == "negative_token_id":
                entries[at] = [{"-5": lp}]
            elif kind == "out_of_vocab_token_id":
                entries[at] = [{str(len(self.tokenizer) + 1000): lp}]
            elif kind == "nan_logprob":
                entries[at] = [{tid: math.nan}]
            elif kind == "positive_logprob":
                entries[at] = [{tid: 5.0}]
        return web.json_response(out)  # json.dumps writes NaN as NaN, as Python servers do

    def _answer(self, body: dict[str, Any]) -> tuple[dict[str, Any], ScriptedFault | None]:
        prompt = body["prompt"]
        if isinstance(prompt, dict) and "prompt_token_ids" in prompt:
            prompt_ids = [int(i) for i in prompt["prompt_token_ids"]]
        elif isinstance(prompt, str):
            prompt_ids = list(self.tokenizer.encode(prompt, add_special_tokens=False))
        else:
            raise TypeError("'prompt' must be {'prompt_token_ids': [...]} or a string")
        params = {k: v for k, v in body.items() if k != "prompt"}
        n = int(params.get("n", 1) or 1)
        max_tokens = params.get("max_tokens")
        prompt_text = self.tokenizer.decode(prompt_ids, skip_special_tokens=False)
        record = RecordedRequest(body=body)
        fault = None
        for index in range(n):
            answer = self._responder(ScriptedRequest(prompt_ids, prompt_text, index, n, params))
            if isinstance(answer, ScriptedFault):
                fault = fault or answer
                answer = answer.answer
            record.samples.append(self._sample(answer, max_tokens))
        self.requests.append(record)
        if len(self.requests) > 2 * self.max_recorded:  # trimmed in bulk: appends stay O(1)
            del self.requests[: -self.max_recorded]
        out: dict[str, Any] = {
            "text": [s.text for s in record.samples],
            "prompt": prompt_text,
            "finish_reasons": [s.finish_reason for s in record.samples],
        }
        if params.get("logprobs") is not None:
            out["logprobs"] = [
                [[{str(tid): lp}] for tid, lp in zip(s.token_ids, s.logprobs, strict=True)] for s in record.samples
            ]
            out["prompt_token_ids"] = prompt_ids
            out["token_ids"] = [s.token_ids for s in record.samples]
        if params.get("prompt_logprobs") is not None:
            k = int(params["prompt_logprobs"])
            out["prompt_logprobs"] = scripted_prompt_logprobs(prompt_ids, k, len(self.tokenizer))
        return out, fault

    def _sample(self, answer: str | ScriptedCompletion, max_tokens: Any) -> _Sample:
        if isinstance(answer, str):
            answer = ScriptedCompletion(text=answer)
        if not isinstance(answer, ScriptedCompletion):
            raise TypeError(f"responder returned {type(answer).__name__}; return a str or ScriptedCompletion")
        finish = answer.finish_reason
        if answer.token_ids is not None:
            ids = list(answer.token_ids)
        else:
            ids = list(self.tokenizer.encode(answer.text or "", add_special_tokens=False))
            eos = self.tokenizer.eos_token_id
            if finish == "stop" and eos is not None:
                ids.append(int(eos))  # vLLM returns the EOS token it stopped on
        logprobs = (
            list(answer.logprobs) if answer.logprobs is not None else [self.logprob_fn(t, i) for i, t in enumerate(ids)]
        )
        if len(logprobs) != len(ids):
            raise ValueError(f"scripted completion has {len(ids)} token ids but {len(logprobs)} logprobs")
        if isinstance(max_tokens, int) and len(ids) > max_tokens:
            ids, logprobs, finish = ids[:max_tokens], logprobs[:max_tokens], "length"
        text = self.tokenizer.decode(ids, skip_special_tokens=True)
        return _Sample(text=text, token_ids=ids, logprobs=logprobs, finish_reason=finish)


def _template_messages(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """OpenAI messages as chat templates expect them (as vLLM's server prepares them): ``content`` always
    present, tool-call arguments as objects where they are JSON objects."""
    out = []
    for message in messages:
        if not isinstance(message, Mapping):
            raise TypeError(f"a message must be an object, not {type(message).__name__}")
        message = dict(message)
        if message.get("content") is None:
            message["content"] = ""
        calls = []
        for call in message.get("tool_calls") or []:
            call = dict(call)
            function = dict(call.get("function") or {})
            if isinstance(function.get("arguments"), str):
                try:
                    parsed = json.loads(function["arguments"])
                except json.JSONDecodeError:
                    parsed = None
                if isinstance(parsed, dict):
                    function["arguments"] = parsed
            call["function"] = function
            calls.append(call)
        if calls:
            message["tool_calls"] = calls
        out.append(message)
    return out


def scripted_prompt_logprobs(ids: Sequence[int], k: int, vocab_size: int) -> list[dict[str, float] | None]:
    """vLLM's ``prompt_logprobs`` answer, scripted: ``None`` at position 0, then per position the prompt's own
    token and ``k`` others, each a fixed function of (previous token, position), best first."""
    out: list[dict[str, float] | None] = [None]
    for p in range(1, len(ids)):
        entry = {str(ids[p]): -0.05 - 0.01 * (p % 7)}
        j = 0
        while len(entry) < k + 1:
            token = (ids[p - 1] * 7 + p * 13 + j * 101) % vocab_size
            entry.setdefault(str(token), -0.5 - 0.25 * len(entry))
            j += 1
        out.append(entry)
    return out


def _read_texts(path: Path, flag: str) -> list[str]:
    try:
        texts = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise SystemExit(f"error: {flag} {path}: {err}; pass a JSON file holding a list of strings") from None
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        raise SystemExit(f"error: {flag} {path} must hold a non-empty JSON list of strings")
    return texts


def _policy_responder(name: str, seed: int, tokenizer: Any) -> Responder:
    from hermes_env.testing.policies import load_policy
    from hermes_env.testing.replay import ReplayPolicy

    try:
        policy = load_policy(name, seed)
        return policy.vllm_responder(tokenizer) if isinstance(policy, ReplayPolicy) else policy.vllm_responder
    except ValueError as err:
        raise SystemExit(f"error: {err}") from None


def main(argv: Sequence[str] | None = None) -> None:
    """Serve a scripted vLLM ``/generate`` on 127.0.0.1 until interrupted."""
    parser = argparse.ArgumentParser(
        prog="python -m hermes_env.testing.scripted_vllm",
        description="A SCRIPTED stand-in for vLLM's /generate server (no model) on 127.0.0.1. Answers come from "
        "one of --policy, --turns or --texts (default: one fixed reply).",
    )
    parser.add_argument("--port", type=int, default=9000, help="port on 127.0.0.1 (default %(default)s)")
    parser.add_argument(
        "--tokenizer", default="bundled:qwen3", help="tokenizer folder, Hub id or bundled:NAME (default %(default)s)"
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--policy", help=POLICY_HELP)
    source.add_argument("--turns", type=Path, help="JSON list: text i answers turn i of every conversation")
    source.add_argument("--texts", type=Path, help="JSON list of texts served in order, across conversations")
    parser.add_argument("--cycle", action="store_true", help="with --texts: wrap around when the texts are used up")
    parser.add_argument("--seed", type=int, default=0, help="with --policy: seed of its choices")
    parser.add_argument("--model-name", default="scripted", help="model name it reports (default %(default)s)")
    args = parser.parse_args(argv)

    from hermes_env.errors import TokenizerUnavailable
    from hermes_env.resources import load_tokenizer

    try:
        tokenizer = load_tokenizer(args.tokenizer)
    except (TokenizerUnavailable, ModuleNotFoundError) as err:
        raise SystemExit(f"error: {err}") from None
    responder: Responder | Sequence[str]
    if args.policy:
        responder, what = _policy_responder(args.policy, args.seed, tokenizer), f"policy {args.policy}"
        if isinstance(parser_name := getattr(responder, "parser", None), str):
            what += f", tool calls in the {parser_name} format"
    elif args.turns:
        responder, what = TurnScript(_read_texts(args.turns, "--turns")), f"turn script {args.turns}"
    elif args.texts:
        responder, what = _read_texts(args.texts, "--texts"), f"texts {args.texts}"
    else:
        responder, what = ["This is a scripted reply."], "one fixed reply"
    server = ScriptedVLLMServer(
        tokenizer, responder, port=args.port, model_name=args.model_name, cycle=args.cycle or not args.texts
    )
    try:
        server.start()
    except RuntimeError as err:
        raise SystemExit(f"error: {err}; pick another --port") from None
    try:
        print(f"scripted vLLM /generate (no model, {what}) on {server.base_url}; Ctrl-C to stop", flush=True)
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()
