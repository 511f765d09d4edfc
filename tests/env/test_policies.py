"""The scripted solution policy: plans, recovery from tool errors, both transcript forms."""

from __future__ import annotations

import json

from hermes_env.testing.policies import (
    DONE_TEXT,
    EXPLORE_COMMAND,
    TYPO_TOOL,
    UNKNOWN_TEXT,
    WRONG_COMMAND,
    ScriptedTask,
    SolutionPolicy,
    output_answer,
)

TASK = ScriptedTask("t", "Create a.txt", "touch a.txt")


def call_of(text: str) -> dict:
    return json.loads(text.split("<tool_call>")[1].split("</tool_call>")[0])


def test_each_plan_then_its_follow_up() -> None:
    for plan, first_call in [("solve", ("terminal", TASK.solution)), ("explore", ("terminal", EXPLORE_COMMAND)),
                             ("typo", (TYPO_TOOL, TASK.solution)), ("wrong", ("terminal", WRONG_COMMAND))]:  # fmt: skip
        policy = SolutionPolicy([TASK], weights={plan: 1.0})
        first = policy.next_turn(TASK, [])
        assert (
            first.startswith("<think>")
            and (call_of(first)["name"], call_of(first)["arguments"]["command"]) == first_call
        )
        second = policy.next_turn(TASK, [first])
        if plan in ("explore", "typo"):
            assert call_of(second) == {"name": "terminal", "arguments": {"command": TASK.solution}}
            assert DONE_TEXT in policy.next_turn(TASK, [first, second])
        else:
            assert DONE_TEXT in second and "<tool_call>" not in second
    give_up = SolutionPolicy([TASK], weights={"give_up": 1.0}).next_turn(TASK, [])
    assert "<tool_call>" not in give_up


def test_message_and_prompt_forms_agree() -> None:
    policy = SolutionPolicy([TASK], weights={"explore": 1.0})
    messages = [{"role": "user", "content": "Create a.txt"}]
    first = policy.respond_to_messages(messages)
    call = call_of(first)
    messages += [
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c", "type": "function",
         "function": {"name": call["name"], "arguments": json.dumps(call["arguments"])}}]},
        {"role": "tool", "tool_call_id": "c", "content": "a.txt\n[exit code 0]"},
    ]  # fmt: skip
    second = policy.respond_to_messages(messages)
    prompt = (
        "<|im_start|>user\nCreate a.txt<|im_end|>\n<|im_start|>assistant\n" + first + "<|im_end|>\n"
        "<|im_start|>user\n<tool_response>\na.txt\n[exit code 0]\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
    )
    assert policy.respond_to_prompt(prompt) == second
    assert call_of(second)["arguments"]["command"] == TASK.solution


def test_answers_from_tool_output_and_unknown_prompts() -> None:
    policy = SolutionPolicy([TASK], weights={"solve": 1.0}, answer_from_output=True)
    first = policy.next_turn(TASK, [])
    assert policy.next_turn(TASK, [first], '{"output": "42", "exit_code": 0, "error": null}').endswith("ANSWER: 42")
    assert output_answer('{"output": "x\\n\\ny ", "exit_code": 1, "error": null}') == "y"
    assert output_answer("plain\ntext") == "text"
    assert policy.respond_to_messages([{"role": "user", "content": "hi"}]) == UNKNOWN_TEXT
