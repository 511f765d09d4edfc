"""``python -m hermes_env.envs.terminal_tasks serve|process|evaluate|demo``.

``serve``/``process``/``evaluate`` are atroposlib's commands (``--config``, ``--env.*``, ``--openai.*``).
``demo`` runs ``process`` end to end on this machine with no model: a SCRIPTED policy server
speaking vLLM's ``/generate`` (hermes_env.testing.scripted_vllm) answers from the tasks'
reference solutions — sometimes wrongly, so rewards vary — in Phase 2 with the Qwen3
tokenizer, tools sandboxed by bubblewrap (``--backend local`` where bwrap is unavailable).
"""

from __future__ import annotations

import argparse
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


def demo(argv: Sequence[str]) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m hermes_env.envs.terminal_tasks demo",
        description=DEMO_DESCRIPTION,
        epilog="Any other --env.* / --openai.* flag (and --verbose) is passed on to process.",
    )
    parser.add_argument("--groups", type=int, default=8, help="groups to write (default 8)")
    parser.add_argument("--group-size", type=int, default=4, help="rollouts per group (default 4)")
    parser.add_argument("--backend", default="bwrap", help="terminal backend: bwrap (default), local or sandbox")
    parser.add_argument("--out", default="data/terminal_tasks_demo.jsonl", help="jsonl of scored groups")
    parser.add_argument("--seed", type=int, default=0, help="seed of the scripted policy's choices")
    args, passthrough = parser.parse_known_args(argv)

    from hermes_env.env.dataset import load_rows
    from hermes_env.envs import default_tokenizer_name
    from hermes_env.resources import load_tokenizer
    from hermes_env.testing.policies import SolutionPolicy
    from hermes_env.testing.scripted_vllm import ScriptedVLLMServer

    backend = args.backend
    if backend == "bwrap":
        from hermes_env.backends.bwrap import bwrap_problem

        problem = bwrap_problem()
        if problem is not None:
            print(f"demo: bubblewrap is unusable here ({problem}); running tools with --backend local", file=sys.stderr)
            backend = "local"
    tokenizer_name = default_tokenizer_name()
    tokenizer = load_tokenizer(tokenizer_name)
    policy = SolutionPolicy(load_rows(str(TASKS_PATH)), seed=args.seed)
    with ScriptedVLLMServer(tokenizer, policy.vllm_responder, model_name="scripted-policy") as server:
        print(
            f"demo: terminal_tasks `process`, Phase 2 against a SCRIPTED vLLM /generate policy (no model) at "
            f"{server.url}\ndemo: {args.groups} groups x {args.group_size} rollouts, tools in {backend}, "
            f"tokenizer {tokenizer_name}",
            file=sys.stderr,
        )
        sys.argv = [
            f"{sys.argv[0]}",
            "process",
            "--config", str(CONFIG_PATH),
            "--openai.base_url", server.base_url,
            "--openai.server_type", "vllm",
            "--openai.model_name", "scripted-policy",
            "--openai.tokenizer_name", tokenizer_name,
            "--env.tokenizer_name", tokenizer_name,
            "--env.terminal_backend", backend,
            "--env.total_steps", str(args.groups),
            "--env.group_size", str(args.group_size),
            "--env.data_path_to_save_groups", args.out,
            "--env.seed", str(args.seed),
            "--env.use_wandb", "false",
            *passthrough,
        ]  # fmt: skip
        run_cli(TerminalTasksEnv)


DEMO_HELP = "run process end to end on this machine against a scripted policy server (no model, no GPU)"


def main() -> None:
    configure_logging()
    if len(sys.argv) > 1 and sys.argv[1] == "demo":
        demo(sys.argv[2:])
    else:
        run_cli(TerminalTasksEnv, extra_commands={"demo": DEMO_HELP})


if __name__ == "__main__":
    main()
