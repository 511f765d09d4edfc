"""``python -m hermes_env.envs.terminal_tasks serve|process|evaluate|demo``.

``serve``/``process``/``evaluate`` are atroposlib's commands (``--config``, ``--env.*``, ``--openai.*``).
``demo`` runs ``process`` end to end on this machine with no model: a SCRIPTED policy server
speaking vLLM's ``/generate`` (hermes_env.testing.scripted_vllm) answers from the tasks'
reference solutions — sometimes wrongly, so rewards vary — in Phase 2 with the Qwen3
tokenizer, tools sandboxed by bubblewrap (``--backend local`` where bwrap is unavailable).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from hermes_env.env.cli import configure_logging, run_cli
from hermes_env.envs.terminal_tasks.env import CONFIG_PATH, TASKS_PATH, TerminalTasksEnv

DEMO_DESCRIPTION = (
    "Runs terminal_tasks' process command end to end on this machine with no model: a SCRIPTED policy server "
    "speaking vLLM's /generate answers from the tasks' reference solutions (sometimes wrongly, so rewards vary), "
    "in Phase 2 with the bundled Qwen3 tokenizer, tools sandboxed by bubblewrap (local where bubblewrap is "
    "unusable). Writes the scored groups (jsonl), their HTML view and a summary table."
)
DEMO_HELP = "run process end to end on this machine against a scripted policy server (no model, no GPU)"


def demo(argv: Sequence[str]) -> None:
    from hermes_env.env.dataset import load_rows
    from hermes_env.testing.demo import run_demo

    run_demo(
        TerminalTasksEnv,
        argv,
        prog="python -m hermes_env.envs.terminal_tasks demo",
        description=DEMO_DESCRIPTION,
        tasks=load_rows(str(TASKS_PATH)),
        default_out="data/terminal_tasks_demo.jsonl",
        config_path=CONFIG_PATH,
    )


def main() -> None:
    configure_logging()
    if len(sys.argv) > 1 and sys.argv[1] == "demo":
        demo(sys.argv[2:])
    else:
        run_cli(TerminalTasksEnv, extra_commands={"demo": DEMO_HELP})


if __name__ == "__main__":
    main()
