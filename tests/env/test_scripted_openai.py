"""ScriptedOpenAIServer: OpenAI chat-completions shape, reasoning split, hermes tool-call parsing."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest
from hermes_env.testing.scripted_openai import ScriptedOpenAIServer, split_reasoning
from hermes_env.tools import REGISTRY


def test_split_reasoning() -> None:
    assert split_reasoning("<think>\nplan\n</think>\n\nanswer") == ("plan", "answer")
    assert split_reasoning("no think") == (None, "no think")


def test_chat_completion_with_reasoning_and_tool_calls() -> None:
    call = '{"name": "terminal", "arguments": {"command": "ls"}}'
    text = f"<think>use the shell</think>\n\n<tool_call>\n{call}\n</tool_call>"
    seen: list[tuple[list[dict[str, Any]], list[dict[str, Any]] | None]] = []

    def responder(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
        seen.append((messages, tools))
        return text if messages[-1]["content"] == "go" else "plain answer"

    with ScriptedOpenAIServer(responder) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="x")
        tools = [REGISTRY.get("terminal").schema]
        out = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "go"}], tools=tools, n=2)
        assert len(out.choices) == 2 and out.choices[0].finish_reason == "tool_calls"
        message = out.choices[0].message
        assert message.model_extra["reasoning_content"] == "use the shell"
        assert message.tool_calls[0].function.name == "terminal"
        assert message.tool_calls[0].function.arguments.replace(" ", "") == '{"command":"ls"}'
        plain = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hello"}])
        assert plain.choices[0].message.content == "plain answer" and plain.choices[0].finish_reason == "stop"
        assert seen[0][1] == tools
        assert client.models.list().data[0].id == "scripted-policy"
        bad = httpx.post(f"{server.base_url}/chat/completions", content=b"not json")
        assert bad.status_code == 400 and "not JSON" in bad.json()["error"]["message"]


def test_server_lifecycle_errors_are_clear() -> None:
    server = ScriptedOpenAIServer(lambda messages, tools: "hi")
    with pytest.raises(RuntimeError, match="not running; call start"):
        _ = server.port
    with server:
        assert httpx.get(f"http://127.0.0.1:{server.port}/health").text == "ok"
        with pytest.raises(RuntimeError, match="already started"):
            server.start()
        # A second server on the same port cannot listen: start() says so instead of hanging.
        with pytest.raises(RuntimeError, match=f"could not listen on 127.0.0.1:{server.port}"):
            ScriptedOpenAIServer(lambda messages, tools: "hi", port=server.port).start()
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{server._port}/health")
    server.stop()  # stopping twice is a no-op
