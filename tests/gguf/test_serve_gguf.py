"""serve_gguf speaks vLLM's /generate as atroposlib's VLLMServer reads it, and OpenAI's chat API (real model)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from hermes_env.environments.terminal_tasks.gguf_policy import GGUF_EXAMPLE_TURNS, GGUF_SYSTEM_PROMPT

pytestmark = pytest.mark.gguf

TERMINAL = {
    "type": "function",
    "function": {
        "name": "terminal",
        "description": "Run a shell command.",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    },
}


@pytest.fixture
async def vllm_server(gguf_server: Any) -> AsyncIterator[Any]:
    """atroposlib's own VLLMServer client, pointed at serve_gguf."""
    from atroposlib.envs.server_handling.vllm_server import VLLMServer

    config = gguf_server.server_config(timeout=300)
    server = VLLMServer(config)
    yield server
    if server.check_task is not None:
        server.check_task.cancel()


def chat_ids(tokenizer: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> list[int]:
    text = tokenizer.apply_chat_template(messages, tools=tools, tokenize=False, add_generation_prompt=True)
    return tokenizer.encode(text, add_special_tokens=False)


def test_health_and_models(gguf_server: Any) -> None:
    assert httpx.get(f"{gguf_server.url}/health").status_code == 200
    models = httpx.get(f"{gguf_server.base_url}/models").json()
    assert models["data"][0]["id"] == gguf_server.model_name == "SmolLM2-135M-Instruct.Q4_1"
    assert models["data"][0]["max_model_len"] == 8192


async def test_tokens_and_logprobs_through_atroposlib(vllm_server: Any, tools_tokenizer: Any) -> None:
    from hermes_env.managed.reply_checks import check_reply

    ids = chat_ids(tools_tokenizer, [{"role": "user", "content": "Say hello."}])
    reply = await vllm_server.tokens_and_logprobs_completion(
        input_ids=ids, n=3, max_tokens=10, temperature=1.0, model=vllm_server.config.model_name
    )
    # The managed server's own check of /generate replies (ids in the vocabulary, finite logprobs <= 0,
    # known finish reasons, the prompt echoed unchanged) accepts it.
    checked = check_reply(ids, reply, len(tools_tokenizer))
    assert len(checked.outputs) == 3
    for out, finish in zip(checked.outputs, checked.finish_reasons, strict=True):
        assert 1 <= len(out) <= 10
        assert finish == ("stop" if out[-1] in (0, 2, 4) else "length")


async def test_prompt_logprobs_through_atroposlib(vllm_server: Any, tools_tokenizer: Any) -> None:
    ids = chat_ids(tools_tokenizer, [{"role": "user", "content": "Hi"}])
    out = await vllm_server.get_logprobs(input_ids=ids, top_k=2)
    assert out["prompt_tokens"] == ids
    assert out["prompt_topk_token_ids"][0] == []  # nothing predicts the first token
    assert all(ids_[0] == t for ids_, t in zip(out["prompt_topk_token_ids"][1:], ids[1:], strict=True))
    assert all(all(lp <= 0 for lp in lps) for lps in out["prompt_topk_logprobs"][1:])


def test_generate_response_shape(gguf_server: Any, tools_tokenizer: Any) -> None:
    ids = chat_ids(tools_tokenizer, [{"role": "user", "content": "Count to five."}])
    body = {"prompt": {"prompt_token_ids": ids}, "logprobs": 1, "n": 2, "max_tokens": 6, "seed": 4, "stop": ["\n\n"]}
    out = httpx.post(f"{gguf_server.url}/generate", json=body, timeout=300).json()
    assert out["prompt_token_ids"] == ids and out["prompt"] == tools_tokenizer.decode(ids)
    assert len(out["text"]) == len(out["token_ids"]) == len(out["logprobs"]) == len(out["finish_reasons"]) == 2
    for text, token_ids, entries in zip(out["text"], out["token_ids"], out["logprobs"], strict=True):
        # vLLM's shape: per token a one-element list holding {"<id>": logprob, ...}, the sampled token first.
        assert [int(next(iter(e[0]))) for e in entries] == token_ids
        assert all(1 <= len(e[0]) <= 2 for e in entries)
        assert text == tools_tokenizer.decode(token_ids, skip_special_tokens=True).split("\n\n")[0]
    plain = httpx.post(f"{gguf_server.url}/generate", json={"prompt": "Hello", "max_tokens": 2}, timeout=300).json()
    assert "logprobs" not in plain and len(plain["text"]) == 1


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"max_tokens": 2}, "needs a 'prompt'"),
        ({"prompt": {"prompt_token_ids": [1, 2]}, "beam_width": 2}, "unknown sampling parameter 'beam_width'"),
        (
            {"prompt": {"prompt_token_ids": [1, 2]}, "repetition_penalty": 1.3},
            "repetition_penalty=1.3 is not supported",
        ),
        ({"prompt": {"prompt_token_ids": [1, 2]}, "stream": True}, "streaming is not supported"),
        ({"prompt": {"prompt_token_ids": [1, 99999]}}, "outside the vocabulary"),
        ({"prompt": {"prompt_token_ids": [1, 2]}, "temperature": "hot"}, "temperature must be a finite number"),
        ({"prompt": {"prompt_token_ids": [1, 2]}, "stop": [1]}, "stop must be a string or a list of strings"),
    ],
)
def test_bad_requests_get_a_400_saying_why(gguf_server: Any, body: dict[str, Any], message: str) -> None:
    reply = httpx.post(f"{gguf_server.url}/generate", json=body, timeout=60)
    assert reply.status_code == 400
    assert message in reply.json()["error"]["message"]


def test_neutral_vllm_fields_are_accepted(gguf_server: Any) -> None:
    body = {
        "prompt": {"prompt_token_ids": [1, 2]},
        "max_tokens": 1,
        "repetition_penalty": 1.0,
        "skip_special_tokens": True,
    }
    assert httpx.post(f"{gguf_server.url}/generate", json=body, timeout=60).status_code == 200


async def test_more_requests_than_sequences_are_queued(gguf_server: Any, tools_tokenizer: Any) -> None:
    ids = chat_ids(tools_tokenizer, [{"role": "user", "content": "One word, please."}])
    body = {"prompt": {"prompt_token_ids": ids}, "logprobs": 0, "max_tokens": 4}
    async with httpx.AsyncClient(timeout=300) as client:
        replies = await asyncio.gather(*(client.post(f"{gguf_server.url}/generate", json=body) for _ in range(12)))
    assert [r.status_code for r in replies] == [200] * 12  # the server runs 8 sequences; the rest waited


async def test_chat_completions_parse_tool_calls(gguf_server: Any) -> None:
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=gguf_server.base_url, api_key="x")
    messages = [
        {"role": "system", "content": GGUF_SYSTEM_PROMPT},
        *GGUF_EXAMPLE_TURNS,
        {"role": "user", "content": "Create an empty file named a.txt."},
    ]
    reply = await client.chat.completions.create(
        model=gguf_server.model_name, messages=messages, tools=[TERMINAL], n=6, max_tokens=32, seed=1
    )
    await client.close()
    assert len(reply.choices) == 6 and reply.usage.prompt_tokens > 0
    called = [c for c in reply.choices if c.message.tool_calls]
    assert called, [c.message.content for c in reply.choices]  # the worked examples make most replies tool calls
    for choice in called:
        # "length" stays "length" (the reply was cut), like the managed server reports it.
        assert choice.finish_reason in ("tool_calls", "length")
        # Malformed or cut-off calls come through as the parser returns them (the agent loop turns their bad
        # arguments into a tool error the model sees), so only the shape is checked here.
        for call in choice.message.tool_calls:
            assert call.id and call.function.name and isinstance(call.function.arguments, str)
    for choice in reply.choices:
        if not choice.message.tool_calls:
            assert choice.finish_reason in ("stop", "length") and choice.message.content is not None


def test_completions_endpoint(gguf_server: Any) -> None:
    reply = httpx.post(
        f"{gguf_server.base_url}/completions",
        json={"model": "m", "prompt": "The sky is", "max_tokens": 3, "n": 2},
        timeout=300,
    ).json()
    assert [c["index"] for c in reply["choices"]] == [0, 1] and reply["usage"]["prompt_tokens"] == 3


async def test_a_template_without_tools_says_which_to_use(smollm2: Any) -> None:
    from aiohttp.test_utils import TestClient, TestServer
    from hermes_env.gguf.serve_gguf import build_app

    server, engine = build_app(smollm2, ctx_size=1024, parallel=1, threads=1)
    try:
        async with TestClient(TestServer(server.app())) as client:
            call = {"id": "c", "type": "function", "function": {"name": "terminal", "arguments": "{}"}}
            body = {
                "messages": [
                    {"role": "user", "content": "x"},
                    {"role": "assistant", "content": None, "tool_calls": [call]},
                ]
            }
            reply = await client.post("/v1/chat/completions", json=body)
            assert reply.status == 400
            assert "--chat-template smollm2-tools" in (await reply.json())["error"]["message"]
    finally:
        engine.stop()
        engine.model.close()


def test_a_server_that_cannot_start_says_why(tmp_path: Any) -> None:
    from hermes_env.gguf.process import GGUFServerProcess

    with pytest.raises(RuntimeError, match="no GGUF file at"):
        GGUFServerProcess(tmp_path / "missing.gguf", start_timeout=60).start()
