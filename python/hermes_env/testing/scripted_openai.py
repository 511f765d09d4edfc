"""ScriptedOpenAIServer: a scripted stand-in for an OpenAI-compatible chat server (no model).

It speaks the parts of the chat-completions API that Phase 1 uses (``POST /v1/chat/completions``,
``GET /v1/models``, ``GET /health``) on 127.0.0.1, and answers every request with text from a
*responder* — e.g. :meth:`hermes_env.testing.policies.SolutionPolicy.respond_to_messages`. Like
``vllm serve --enable-auto-tool-choice --tool-call-parser hermes --reasoning-parser qwen3``, it
moves a leading ``<think>`` block into ``reasoning_content`` and turns ``<tool_call>`` blocks into
OpenAI ``tool_calls`` with ``hermes_env.parsers``. It runs its own event loop in a thread, so
it serves both in-process tests and a CLI run in the same process.

    with ScriptedOpenAIServer(policy.respond_to_messages) as server:
        ...  # --openai.base_url {server.base_url} --openai.server_type openai

Command line (127.0.0.1, port 9000 by default)::

    python -m hermes_env.testing.scripted_openai --policy terminal_tasks      # answers terminal_tasks' tasks
    python -m hermes_env.testing.scripted_openai --policy replay:turns.json   # turns per prompt pattern
"""

from __future__ import annotations

import argparse
import inspect
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from aiohttp import web

from hermes_env.parsers.reasoning import split_reasoning
from hermes_env.testing.http_thread import ThreadedHTTPServer
from hermes_env.testing.policies import POLICY_HELP

Responder = Callable[[list[dict[str, Any]], list[dict[str, Any]] | None], "str | Awaitable[str]"]


def chat_choice(
    index: int, text: str, tools: Sequence[dict[str, Any]] | None, tool_parser: str, finish_reason: str = "stop"
) -> dict[str, Any]:
    """One chat-completions choice from raw model text, as vLLM's OpenAI server makes it: a leading ``<think>``
    block becomes ``reasoning_content``, calls in ``tool_parser``'s format become ``tool_calls``."""
    from hermes_env.parsers import get_parser

    reasoning, rest = split_reasoning(text)
    parsed = get_parser(tool_parser, tools=tools).parse(rest)
    message = parsed.to_message()
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    if finish_reason == "stop" and parsed.tool_calls:
        finish_reason = "tool_calls"
    return {"index": index, "message": message, "finish_reason": finish_reason, "logprobs": None}


class ScriptedOpenAIServer(ThreadedHTTPServer):
    """A scripted chat-completions server on 127.0.0.1; ``requests`` records what it was sent."""

    server_name = "scripted OpenAI server"

    def __init__(
        self,
        responder: Responder,
        *,
        tool_parser: str = "hermes",
        model: str = "scripted-policy",
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        super().__init__(host=host, port=port)
        self.responder = responder
        self.tool_parser = tool_parser
        self.model = model
        self.requests: list[dict[str, Any]] = []

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    # -- HTTP handlers ------------------------------------------------------------------------
    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response(
            {"object": "list", "data": [{"id": self.model, "object": "model", "owned_by": "scripted"}]}
        )

    async def _health(self, request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _chat(self, request: web.Request) -> web.Response:
        try:
            body = await request.json()
        except ValueError:
            return web.json_response(
                {"error": {"message": "request body is not JSON", "type": "invalid_request"}}, status=400
            )
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return web.json_response({"error": {"message": "messages must be a non-empty list"}}, status=400)
        tools = body.get("tools")
        self.requests.append(body)
        choices = []
        for index in range(int(body.get("n") or 1)):
            try:
                text = self.responder(messages, tools)
                if inspect.isawaitable(text):
                    text = await text
            except Exception as err:  # noqa: BLE001 - a responder bug becomes an HTTP 500 the client sees
                return web.json_response({"error": {"message": f"responder failed: {err}"}}, status=500)
            choices.append(chat_choice(index, str(text), tools, self.tool_parser))
        return web.json_response(
            {
                "id": f"chatcmpl-{uuid.uuid4().hex[:16]}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model") or self.model,
                # No tokenizer here, so no token counts: ``usage`` is left out (it is optional in the API)
                # rather than reported as zeros.
                "choices": choices,
            }
        )

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/health", self._health)
        app.router.add_post("/v1/chat/completions", self._chat)


def main(argv: Sequence[str] | None = None) -> None:
    """Serve a scripted chat-completions API on 127.0.0.1 until interrupted."""
    parser = argparse.ArgumentParser(
        prog="python -m hermes_env.testing.scripted_openai",
        description="A SCRIPTED stand-in for an OpenAI-compatible chat-completions server (no model) on 127.0.0.1, "
        "for Phase 1 (--openai.server_type openai). Tool calls come back as OpenAI tool_calls.",
    )
    parser.add_argument("--port", type=int, default=9000, help="port on 127.0.0.1 (default %(default)s)")
    parser.add_argument("--policy", required=True, help=POLICY_HELP)
    parser.add_argument("--seed", type=int, default=0, help="with a task policy: seed of its choices")
    parser.add_argument("--model-name", default="scripted-policy", help="model name it reports (default %(default)s)")
    args = parser.parse_args(argv)

    from hermes_env.testing.policies import load_policy

    try:
        policy = load_policy(args.policy, args.seed)
    except ValueError as err:
        raise SystemExit(f"error: {err}") from None
    server = ScriptedOpenAIServer(policy.respond_to_messages, model=args.model_name, port=args.port)
    try:
        server.start()
    except RuntimeError as err:
        raise SystemExit(f"error: {err}; pick another --port") from None
    try:
        print(
            f"scripted OpenAI chat completions (no model, policy {args.policy}) on {server.base_url}; Ctrl-C to stop",
            flush=True,
        )
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()
