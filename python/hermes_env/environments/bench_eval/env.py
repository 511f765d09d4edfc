"""bench_eval: an evaluation-only, benchmark-style environment.

Each row of ``questions.jsonl`` has ``id``, ``question``, ``answer``, ``setup`` (a shell command that
prepares the files the question is about) and ``category``. The model investigates with the
tools and ends with a line ``ANSWER: <answer>``; the score is 1.0 on an exact match after
normalisation (case, surrounding quotes/backticks, trailing period). ``evaluate`` runs every
question once and writes ``metrics.json`` (overall and per-category accuracy, agent
statistics) and ``samples.jsonl`` (one line per question) to ``--env.data_dir_to_save_evals``.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from pydantic import Field

from hermes_env.agent.loop import AgentResult
from hermes_env.env.config import HermesAgentEnvConfig
from hermes_env.env.run_modes import EvalOutcome
from hermes_env.environments._common import TaskFileEnv

HERE = Path(__file__).resolve().parent
QUESTIONS_PATH = HERE / "questions.jsonl"
CONFIG_PATH = HERE / "config.yaml"

SYSTEM_PROMPT = (
    "You answer questions about files in your current directory. Use the tools to find out, then reply with "
    'a final line of the form "ANSWER: <answer>" and no tool call.'
)
_ANSWER = re.compile(r"^\s*\**ANSWER\**\s*:\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)


def extract_answer(text: str) -> str | None:
    """The value of the last ``ANSWER:`` line, or None when the text has none."""
    found = _ANSWER.findall(text or "")
    return found[-1] if found else None


def normalize(answer: str) -> str:
    """Case-folded, without surrounding whitespace, quotes, backticks, bold markers or a trailing period."""
    text, previous = answer, None
    while text != previous:
        previous = text
        text = text.strip().rstrip(".").strip("`'\"*")
    return text.lower()


class BenchEvalConfig(HermesAgentEnvConfig):
    dataset_name: str | None = Field(default=str(QUESTIONS_PATH), description="Questions file (.jsonl).")
    prompt_field: str = Field(default="question", description="Field holding the question.")
    system_prompt: str | None = Field(default=SYSTEM_PROMPT, description="System message.")
    group_size: int = Field(default=1, ge=1, description="Rollouts per question in a group.")
    max_token_length: int = Field(default=8192, ge=1, description="Most tokens of one rollout.")
    max_agent_turns: int = Field(default=6, ge=1, description="Model turns per question.")
    max_tokens_per_turn: int | None = Field(default=1024, ge=1, description="max_tokens of each model call.")
    enabled_toolsets: list[str] | str | None = Field(
        default_factory=lambda: ["terminal", "file"], description="Toolsets offered to the model."
    )
    terminal_timeout: float = Field(default=30.0, gt=0, description="Time limit of one tool call, in seconds.")
    rollout_timeout: float = Field(default=300.0, gt=0, description="Wall-clock budget of one rollout, in seconds.")
    data_dir_to_save_evals: str | None = Field(
        default="eval_results/bench_eval", description="Where metrics.json and samples.jsonl are written."
    )


EVAL_ONLY = "bench_eval is evaluation-only; run `python -m hermes_env.environments.bench_eval evaluate`"


class BenchEvalEnv(TaskFileEnv):
    name = "bench_eval"
    env_config_cls = BenchEvalConfig
    config: BenchEvalConfig
    default_tasks_path = QUESTIONS_PATH
    required_fields = ("id", "answer")

    async def get_next_item(self) -> dict[str, Any]:
        raise RuntimeError(EVAL_ONLY)

    async def env_manager(self) -> None:
        raise SystemExit(f"error: {EVAL_ONLY}")

    async def process_manager(self) -> None:
        raise SystemExit(f"error: {EVAL_ONLY}")

    async def setup_trajectory_workspace(self, item: dict[str, Any], trajectory_id: str, exec_tool: Any) -> None:
        await self.run_setup_command(item, exec_tool, timeout=60)

    async def compute_reward(self, item: dict[str, Any], result: AgentResult, ctx: Any) -> float:
        final = next((m for m in reversed(result.messages) if m.get("role") == "assistant"), None)
        answer = extract_answer(str(final.get("content") or "")) if final else None
        return 1.0 if answer is not None and normalize(answer) == normalize(str(item["answer"])) else 0.0

    def eval_metrics(self, outcomes: list[EvalOutcome]) -> dict[str, float]:
        """Accuracy per question ``category``."""
        scores: dict[str, list[float]] = defaultdict(list)
        for item, _, record, _ in outcomes:
            scores[str(item.get("category", "all"))].append(record.score if record else 0.0)
        return {f"eval/accuracy/{k}": sum(v) / len(v) for k, v in sorted(scores.items())}
