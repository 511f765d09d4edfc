"""ScriptedVLLMServer speaks vLLM's /generate as atroposlib's VLLMServer reads it."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from hermes_env.testing.scripted_vllm import KeyedScript, ScriptedCompletion, ScriptedVLLMServer, scripted_logprob


def test_generate_protocol(tok: Any) -> None:
    prompt = tok.encode("Hello", add_special_tokens=False)
    with ScriptedVLLMServer(tok, ["Hi there", ScriptedCompletion(text="cut", finish_reason="length")]) as srv:
        assert httpx.get(f"{srv.url}/health").status_code == 200
        body = {"prompt": {"prompt_token_ids": prompt}, "logprobs": 0, "n": 2, "max_tokens": 50, "temperature": 1.0}
        out = httpx.post(f"{srv.url}/generate", json=body).json()
        assert out["finish_reasons"] == ["stop", "length"]
        assert out["prompt_token_ids"] == prompt and out["prompt"] == "Hello"
        first = out["token_ids"][0]
        assert first == [*tok.encode("Hi there", add_special_tokens=False), tok.eos_token_id]
        assert out["text"] == ["Hi there", "cut"]
        # vLLM's shape: per token a one-element list holding {"<id>": logprob}
        assert out["logprobs"][0] == [[{str(t): scripted_logprob(t, j)}] for j, t in enumerate(first)]
        assert srv.requests[0].body["temperature"] == 1.0
        # the script is used up: a clear 400, not a hang or a 500
        err = httpx.post(f"{srv.url}/generate", json=body)
        assert err.status_code == 400 and "used up" in err.json()["error"]
        assert httpx.post(f"{srv.url}/generate", json={"n": 1}).status_code == 400


def test_max_tokens_cuts_and_string_prompts(tok: Any) -> None:
    with ScriptedVLLMServer(tok, lambda r: "one two three four", cycle=True) as srv:
        out = httpx.post(f"{srv.url}/generate", json={"prompt": "count", "max_tokens": 2, "logprobs": 0}).json()
        assert out["finish_reasons"] == ["length"] and len(out["token_ids"][0]) == 2
        plain = httpx.post(f"{srv.url}/generate", json={"prompt": "count"}).json()
        assert "logprobs" not in plain and plain["text"] == ["one two three four"]


def test_keyed_script_follows_the_conversation(tok: Any) -> None:
    script = KeyedScript({"task A": ["a1", "a2"], "task B": ["b1"]})
    convo = [{"role": "user", "content": "task A"}]
    with ScriptedVLLMServer(tok, script) as srv:

        def ask(messages: list[dict[str, str]]) -> str:
            text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
            ids = tok.encode(text, add_special_tokens=False)
            return httpx.post(f"{srv.url}/generate", json={"prompt": {"prompt_token_ids": ids}}).json()["text"][0]

        assert ask(convo) == "a1"
        assert ask([*convo, {"role": "assistant", "content": "a1"}, {"role": "user", "content": "more"}]) == "a2"
        assert ask([{"role": "user", "content": "task B"}]) == "b1"


def test_bad_responder_is_refused(tok: Any) -> None:
    with pytest.raises(TypeError, match="responder"):
        ScriptedVLLMServer(tok, "not a script")  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="not running"):
        _ = ScriptedVLLMServer(tok, ["x"]).url


def test_only_the_last_requests_are_recorded(tok: Any) -> None:
    # A long run (a demo, a soak) must not keep every prompt it sent: at most 2 * max_recorded, the newest kept.
    with ScriptedVLLMServer(tok, lambda r: "ok", cycle=True, max_recorded=3) as srv:
        for i in range(20):
            httpx.post(f"{srv.url}/generate", json={"prompt": f"request {i}"}).raise_for_status()
            assert len(srv.requests) <= 6
        assert srv.requests[-1].body["prompt"] == "request 19"
