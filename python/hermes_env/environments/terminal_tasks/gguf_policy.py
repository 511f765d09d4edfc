"""Settings of ``demo --policy gguf``: terminal_tasks for a 135M-parameter model sampled on a CPU.

SmolLM2-135M-Instruct rarely solves these tasks; what the demo shows is real sampled data —
tokens, masks, logprobs — going through the whole pipeline. To give the model a chance to call
a tool at all, it gets only the ``terminal`` tool, short turns and few of them (CPU time), and
three worked exchanges (task, ``terminal`` call, its output) as conversation turns before each
task. Measured at temperature 1 on the ``hello_file`` task: with the worked example written into
the system prompt, 0 of 16 first replies were tool calls; with the exchanges as turns, 10 of 16.
The exchanges are prompt (masked), never trained.
"""

from __future__ import annotations

import json
from typing import Any

GGUF_CHAT_TEMPLATE = "smollm2-tools"

GGUF_SYSTEM_PROMPT = (
    "You are an agent working in a Linux shell; your current directory is your workspace. You act through "
    "tool calls. When the task is done, answer with one short sentence and no tool call."
)


def _exchange(n: int, task: str, command: str, output: str) -> list[dict[str, Any]]:
    call_id = f"example_{n}"
    call = {"name": "terminal", "arguments": json.dumps({"command": command})}
    return [
        {"role": "user", "content": task},
        {"role": "assistant", "content": "", "tool_calls": [{"id": call_id, "type": "function", "function": call}]},
        {"role": "tool", "tool_call_id": call_id, "content": output},
        {"role": "assistant", "content": "Done."},
    ]


GGUF_EXAMPLE_TURNS: list[dict[str, Any]] = [
    *_exchange(1, "List the files here.", "ls", "notes.txt\n[exit code 0]"),
    *_exchange(2, "Show the contents of notes.txt.", "cat notes.txt", "buy milk\n[exit code 0]"),
    *_exchange(3, "Make a directory named src.", "mkdir src", "[exit code 0]"),
]

GGUF_PROCESS_ARGS: tuple[str, ...] = (
    "--env.system_prompt", GGUF_SYSTEM_PROMPT,
    "--env.example_turns", json.dumps(GGUF_EXAMPLE_TURNS),
    "--env.enabled_toolsets", "terminal",
    "--env.tool_call_parser", "hermes",
    "--env.max_agent_turns", "4",
    "--env.max_tokens_per_turn", "128",
    "--env.agent_temperature", "1.0",
    "--env.rollout_timeout", "900",
    "--env.terminal_lifetime", "1200",
    "--openai.timeout", "900",
)  # fmt: skip
