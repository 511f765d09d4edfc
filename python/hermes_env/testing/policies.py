"""Scripted policies: stand-ins for a model that turn task solutions into model output.

No model is involved. A policy reads the conversation so far, recognises the task by its
prompt, and writes the next assistant turn as a Qwen3/Hermes model would: an optional
``<think>...</think>`` block, then either ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``
blocks or a final answer. Each rollout follows one of a few scripted plans, drawn at its first
turn, so that rewards vary within a group:

- ``solve``: run the task's solution, then answer;
- ``explore``: look around (``ls``), then solve;
- ``typo``: call a tool that does not exist, read the error, then solve;
- ``wrong``: run a command that does not solve the task, then answer (reward 0);
- ``give_up``: answer without calling any tool (reward 0).

The plan is recoverable from the conversation (the first assistant turn), so the policy
keeps no per-rollout state and works behind any server, including several rollouts of the
same prompt in flight at once.
"""

from __future__ import annotations

import json
import random
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes_env.testing.replay import ReplayPolicy

PLANS = ("solve", "explore", "typo", "wrong", "give_up")
DEFAULT_WEIGHTS = {"solve": 0.45, "explore": 0.15, "typo": 0.1, "wrong": 0.2, "give_up": 0.1}

# What the plans write; the markers let a later turn recognise the plan from the transcript.
EXPLORE_COMMAND = "ls -la"
WRONG_COMMAND = "echo 'I am not sure how to do this' > attempt.txt"
TYPO_TOOL = "shell"
GIVE_UP_TEXT = "I cannot complete this task."
DONE_TEXT = "The task is complete."
UNKNOWN_TEXT = "Hello! I only know the scripted tasks."


def tool_call_text(name: str, arguments: Mapping[str, Any]) -> str:
    """One call in the Hermes/Qwen3 format."""
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': dict(arguments)})}\n</tool_call>"


def think(text: str) -> str:
    return f"<think>\n{text}\n</think>\n\n"


@dataclass(frozen=True)
class ScriptedTask:
    """What the policy needs of a task: how to recognise it and how to solve it."""

    id: str
    prompt: str
    solution: str  # a shell command (terminal tool)
    # The same solution as calls of other tools (hermes-agent's names and arguments), when the task has one.
    tool_calls: tuple[Mapping[str, Any], ...] = ()


def _calls(text: str) -> list[tuple[str, dict[str, Any]]]:
    """The tool calls (name, arguments) already issued in a transcript (either rendering)."""
    found = []
    for match in re.finditer(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", text, re.DOTALL):
        try:
            call = json.loads(match.group(1))
        except json.JSONDecodeError:
            continue
        args = call.get("arguments") or {}
        if isinstance(args, dict):
            found.append((str(call.get("name")), args))
    return found


def _commands(text: str) -> list[str]:
    """The terminal commands already issued in a transcript (either rendering)."""
    return [f"{name}:{args['command']}" for name, args in _calls(text) if "command" in args]


class SolutionPolicy:
    """Answers each turn from the task's solution, following a plan drawn per rollout."""

    def __init__(
        self,
        tasks: Iterable[ScriptedTask | Mapping[str, Any]],
        *,
        weights: Mapping[str, float] | None = None,
        seed: int = 0,
        tool_name: str = "terminal",
        answer_from_output: bool = False,
        prefer_tool_calls: bool = False,
    ) -> None:
        self.tasks = [t if isinstance(t, ScriptedTask) else task_from_row(t) for t in tasks]
        if not self.tasks:
            raise ValueError("SolutionPolicy needs at least one task")
        weights = dict(weights or DEFAULT_WEIGHTS)
        unknown = sorted(set(weights) - set(PLANS))
        if unknown:
            raise ValueError(f"unknown plan(s) {unknown}; plans are {list(PLANS)}")
        self.plans = [p for p in PLANS if weights.get(p, 0) > 0]
        self.weights = [weights[p] for p in self.plans]
        self.tool_name = tool_name
        # Question-answering tasks: the final turn states the last tool output as ``ANSWER: ...``.
        self.answer_from_output = answer_from_output
        # Solve with a task's own tool calls (write_file, patch, ...) where it has them.
        self.prefer_tool_calls = prefer_tool_calls
        self._rng = random.Random(seed)
        self._lock = threading.Lock()  # servers may call from several threads
        # Longest prompts first, so a prompt that contains another still matches itself.
        self._by_prompt = sorted(self.tasks, key=lambda t: len(t.prompt), reverse=True)

    def find_task(self, text: str) -> ScriptedTask | None:
        for task in self._by_prompt:
            if task.prompt in text:
                return task
        return None

    def draw_plan(self) -> str:
        with self._lock:
            return self._rng.choices(self.plans, self.weights)[0]

    def next_turn(self, task: ScriptedTask, history: Sequence[str], last_tool_output: str | None = None) -> str:
        """The next assistant turn, given the texts of the assistant turns so far (raw, with tool calls)."""
        if not history:
            plan = self.draw_plan()
            if plan == "solve":
                return think("I know how to do this; running the command.") + self._solve(task)
            if plan == "explore":
                return think("Let me look at the workspace first.") + tool_call_text(
                    self.tool_name, {"command": EXPLORE_COMMAND}
                )
            if plan == "typo":
                return think("I'll use the shell.") + tool_call_text(TYPO_TOOL, {"command": task.solution})
            if plan == "wrong":
                return think("I'll try something.") + tool_call_text(self.tool_name, {"command": WRONG_COMMAND})
            return think("This looks too hard.") + GIVE_UP_TEXT
        first = history[0]
        solved = any(self._is_solution(turn, task) for turn in history)
        if not solved and (f'"{TYPO_TOOL}"' in first or EXPLORE_COMMAND in first):
            return think("Now I can do it properly.") + self._solve(task)
        if self.answer_from_output and last_tool_output is not None:
            return think("The output answers the question.") + f"ANSWER: {output_answer(last_tool_output)}"
        return think("Done.") + DONE_TEXT

    def _solve(self, task: ScriptedTask) -> str:
        if self.prefer_tool_calls and task.tool_calls:
            return "\n".join(tool_call_text(str(c["name"]), c["arguments"]) for c in task.tool_calls)
        return tool_call_text(self.tool_name, {"command": task.solution})

    def _is_solution(self, turn: str, task: ScriptedTask) -> bool:
        if self.prefer_tool_calls and task.tool_calls:
            first = task.tool_calls[0]
            return (str(first["name"]), dict(first["arguments"])) in _calls(turn)
        return f"{self.tool_name}:{task.solution}" in _commands(turn)

    # -- adapters for the two scripted servers ---------------------------------------------
    def respond_to_messages(self, messages: Sequence[Mapping[str, Any]], tools: Any = None) -> str:
        """Chat-completions form (ScriptedOpenAIServer): OpenAI messages in, raw model text out."""
        user_text = "\n".join(str(m.get("content") or "") for m in messages if m.get("role") in ("user", "system"))
        task = self.find_task(user_text)
        if task is None:  # not one of our tasks (e.g. atroposlib's "hi" health probe): a short plain answer
            return UNKNOWN_TEXT
        history = []
        for m in messages:
            if m.get("role") != "assistant":
                continue
            calls = "".join(
                tool_call_text(c["function"]["name"], _loads(c["function"].get("arguments")))
                for c in m.get("tool_calls") or []
            )
            history.append(f"{m.get('content') or ''}{calls}")
        tool_outputs = [str(m.get("content") or "") for m in messages if m.get("role") == "tool"]
        return self.next_turn(task, history, tool_outputs[-1] if tool_outputs else None)

    def respond_to_prompt(self, prompt: str) -> str:
        """Raw-prompt form (vLLM ``/generate``): the rendered ChatML prompt in, raw model text out."""
        task = self.find_task(prompt)
        if task is None:
            return UNKNOWN_TEXT
        turns = prompt.split("<|im_start|>assistant")
        # turns[0] is system/user; the last piece is the open generation prompt.
        history = [t.split("<|im_end|>")[0] for t in turns[1:-1]]
        responses = re.findall(r"<tool_response>\n?(.*?)\n?</tool_response>", prompt, re.DOTALL)
        return self.next_turn(task, history, responses[-1] if responses else None)

    def vllm_responder(self, request: Any) -> str:
        """Responder for ScriptedVLLMServer: answers a ``ScriptedRequest`` from its decoded prompt."""
        return self.respond_to_prompt(request.prompt_text)


def task_from_row(row: Mapping[str, Any]) -> ScriptedTask:
    """A ScriptedTask from a task row (terminal_tasks/swe_lite `prompt`, bench_eval `question`)."""
    prompt = row.get("prompt") or row.get("question")
    if not prompt or "solution" not in row:
        raise ValueError(f"task {row.get('id')!r} needs a prompt (or question) and a solution")
    calls = tuple(dict(c) for c in row.get("solution_tool_calls") or ())
    return ScriptedTask(str(row["id"]), str(prompt), str(row["solution"]), calls)


POLICY_TASK_FILES = {"terminal_tasks": "hermes_env.environments.terminal_tasks:tasks.jsonl"}
REPLAY_PREFIX = "replay:"
POLICY_HELP = (
    "terminal_tasks or a .jsonl of tasks with id, prompt and solution (answers from the tasks' reference solutions, "
    "sometimes wrongly, so rewards vary), or replay:FILE (the turns a JSON/YAML file gives per prompt pattern; see "
    "hermes_env.testing.replay)"
)


def load_policy(name: str, seed: int = 0) -> SolutionPolicy | ReplayPolicy:
    """The policy a stand-in's ``--policy`` names (see ``POLICY_HELP``); ``ValueError`` says what is wrong."""
    from importlib import resources

    from hermes_env.env.dataset import load_rows
    from hermes_env.testing.replay import ReplayPolicy

    if name.startswith(REPLAY_PREFIX):
        path = name[len(REPLAY_PREFIX) :]
        if not path:
            raise ValueError("--policy replay: needs a file: replay:FILE")
        return ReplayPolicy.load(path)
    if name in POLICY_TASK_FILES:
        package, _, filename = POLICY_TASK_FILES[name].partition(":")
        path = str(resources.files(package).joinpath(filename))
    elif Path(name).is_file():
        path = name
    else:
        known = ", ".join(POLICY_TASK_FILES)
        raise ValueError(
            f"--policy {name!r} is neither {known}, a task file (.jsonl with id/prompt/solution) nor replay:FILE"
        )
    try:
        return SolutionPolicy(load_rows(path), seed=seed)
    except ValueError as err:
        raise ValueError(f"--policy {name}: {err}") from None


def output_answer(output: str) -> str:
    """The last line a terminal command printed, from the tool's result (hermes-agent's JSON, or plain text)."""
    try:
        result = json.loads(output)
    except json.JSONDecodeError:
        result = None
    if isinstance(result, dict) and isinstance(result.get("output"), str):
        output = result["output"]
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _loads(arguments: Any) -> dict[str, Any]:
    if isinstance(arguments, dict):
        return arguments
    try:
        value = json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return {"_raw": arguments}
    return value if isinstance(value, dict) else {"_raw": arguments}


def expected_success(task: ScriptedTask, messages: Sequence[Mapping[str, Any]], tool_name: str = "terminal") -> bool:
    """Whether a finished conversation ran the task's solution through the real tool (for tests)."""
    for m in messages:
        for call in m.get("tool_calls") or []:
            if (
                call["function"]["name"] == tool_name
                and _loads(call["function"]["arguments"]).get("command") == task.solution
            ):
                return True
    return False
