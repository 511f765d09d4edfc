"""``python -m hermes_env.environments.harbor oracle|export-tb2|serve|process|evaluate``."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hermes_env.testing.demo import DemoPolicy

#: ``demo --policy gguf``: SmolLM2-135M on this CPU gets the terminal tool only, short turns and few of them.
GGUF_ARGS: tuple[str, ...] = (
    "--env.enabled_toolsets", "terminal",
    "--env.tool_call_parser", "hermes",
    "--env.max_agent_turns", "4",
    "--env.max_tokens_per_turn", "128",
    "--env.agent_temperature", "1.0",
    "--openai.timeout", "900",
)  # fmt: skip


@contextmanager
def _gguf_policy(seed: int) -> Iterator[DemoPolicy]:
    """terminal_tasks' GGUF policy server (SmolLM2-135M-Instruct on this CPU), with harbor's settings."""
    from hermes_env.environments.terminal_tasks.__main__ import _gguf_policy as serve_gguf

    with serve_gguf(seed) as policy:
        yield replace(policy, process_args=GGUF_ARGS)


def demo(argv: list[str]) -> None:
    """``demo TASKS_DIR [flags]``: ``process`` end to end with the SCRIPTED policy that sends each task's
    solution as a terminal call (sometimes a wrong command instead, so rewards vary); no model."""
    from hermes_env.environments.harbor.env import HarborEnv
    from hermes_env.environments.harbor.scripted import scripted_rows
    from hermes_env.environments.harbor.task import load_tasks
    from hermes_env.errors import HarborTaskError
    from hermes_env.testing.demo import DemoPolicyOption, run_demo

    if not argv or argv[0].startswith("-"):
        sys.exit("usage: python -m hermes_env.environments.harbor demo TASKS_DIR [--groups N] [--group-size N] [...]")
    try:
        rows = scripted_rows(load_tasks(argv[0]))
    except HarborTaskError as exc:
        sys.exit(f"error: {exc}")
    if not rows:
        sys.exit(f"error: no task in {argv[0]} has a solution/ for the scripted policy to run")
    names = ",".join(row["id"] for row in rows)
    run_demo(
        HarborEnv,
        [*argv[1:], "--env.tasks_dir", argv[0], "--env.task_names", names],
        prog="python -m hermes_env.environments.harbor demo TASKS_DIR",
        description=demo.__doc__,
        tasks=rows,
        default_out="data/harbor_demo.jsonl",
        default_backend=None,
        default_groups=4,
        default_group_size=2,
        other_policies={"gguf": DemoPolicyOption("SmolLM2-135M sampled on this CPU by llama.cpp", start=_gguf_policy)},
    )


def main() -> None:
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command == "oracle":
        from hermes_env.environments.harbor.oracle import main as oracle_main

        sys.exit(oracle_main(sys.argv[2:]))
    if command == "export-tb2":
        from hermes_env.environments.harbor.export_tb2 import main as export_main

        sys.exit(export_main(sys.argv[2:]))
    from hermes_env.env.cli import configure_logging, run_cli
    from hermes_env.environments.harbor.env import HarborEnv

    configure_logging()
    if command == "demo":
        demo(sys.argv[2:])
        return
    run_cli(
        HarborEnv,
        extra_commands={
            "oracle": "check a folder of Harbor tasks with their reference solutions (JSON + HTML report)",
            "export-tb2": "write Harbor tasks as the rows upstream's Terminal-Bench 2 environment loads",
            "demo": "run process on a folder of Harbor tasks against a scripted policy that runs their solutions",
        },
    )


if __name__ == "__main__":
    main()
