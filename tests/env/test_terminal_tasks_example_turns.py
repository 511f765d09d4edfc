"""terminal_tasks' example_turns: worked exchanges put before every task (the gguf demo's help for a small model)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hermes_env.environments.terminal_tasks.env import TerminalTasksConfig, TerminalTasksEnv
from hermes_env.environments.terminal_tasks.gguf_policy import GGUF_EXAMPLE_TURNS
from hermes_env.errors import EnvSetupError
from pydantic import ValidationError


def test_example_turns_come_as_a_json_string_on_the_command_line() -> None:
    config = TerminalTasksConfig(tokenizer_name="x", example_turns=json.dumps(GGUF_EXAMPLE_TURNS))
    assert config.example_turns == GGUF_EXAMPLE_TURNS
    with pytest.raises(ValidationError, match="JSON list of chat messages"):
        TerminalTasksConfig(tokenizer_name="x", example_turns="[not json")
    with pytest.raises(ValidationError, match="each a dict with a 'role'"):
        TerminalTasksConfig(tokenizer_name="x", example_turns=[{"content": "no role"}])


async def test_they_precede_the_task_and_phase_1_refuses_them(make_env: Any) -> None:
    env = make_env(env_cls=TerminalTasksEnv, example_turns=GGUF_EXAMPLE_TURNS, system_prompt="S")
    messages = env.build_messages({"id": "t", "prompt": "Do it.", "check": "true"})
    assert messages == [{"role": "system", "content": "S"}, *GGUF_EXAMPLE_TURNS, {"role": "user", "content": "Do it."}]
    assert env.phase == "openai"  # make_env's server is an OpenAI endpoint: Phase 1 would train the examples
    with pytest.raises(EnvSetupError, match="example_turns work in Phase 2 only"):
        await env.setup()
