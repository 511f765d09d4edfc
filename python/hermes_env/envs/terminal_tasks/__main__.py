"""``python -m hermes_env.envs.terminal_tasks serve|process|evaluate|demo``.

``serve``/``process``/``evaluate`` are atroposlib's commands (``--config``, ``--env.*``, ``--openai.*``).
``demo`` runs ``process`` end to end on this machine with no model: a SCRIPTED policy server
speaking vLLM's ``/generate`` (hermes_env.testing.scripted_vllm) answers from the tasks'
reference solutions — sometimes wrongly, so rewards vary — in Phase 2 with the Qwen3
tokenizer, tools sandboxed by bubblewrap (``--backend local`` where bwrap is unavailable), or
with ``--backend docker`` one container per rollout, where the tasks that need their own image
run in it (the others in the base image that ``scripts/setup.sh`` makes).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from hermes_env.env.cli import run_cli
from hermes_env.envs import configure_logging
from hermes_env.envs.terminal_tasks.env import CONFIG_PATH, TASKS_PATH, TerminalTasksEnv


def demo(argv: Sequence[str]) -> None:
    from hermes_env.env.dataset import load_rows
    from hermes_env.testing.demo import run_demo

    run_demo(
        TerminalTasksEnv,
        argv,
        prog="python -m hermes_env.envs.terminal_tasks demo",
        description=__doc__,
        tasks=load_rows(str(TASKS_PATH)),
        default_out="data/terminal_tasks_demo.jsonl",
        config_path=CONFIG_PATH,
    )


def main() -> None:
    configure_logging()
    if len(sys.argv) > 1 and sys.argv[1] == "demo":
        demo(sys.argv[2:])
    else:
        run_cli(TerminalTasksEnv)


if __name__ == "__main__":
    main()
