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

import argparse
import sys
import warnings
from collections.abc import Sequence
from typing import Any

from hermes_env.env.cli import run_cli
from hermes_env.envs import configure_logging
from hermes_env.envs.terminal_tasks.env import CONFIG_PATH, TASKS_PATH, TerminalTasksEnv


def demo(argv: Sequence[str]) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m hermes_env.envs.terminal_tasks demo",
        description=__doc__,
        epilog="Any other --env.* / --openai.* flag is passed on to `process`.",
    )
    parser.add_argument("--groups", type=int, default=8, help="groups to write (default 8)")
    parser.add_argument("--group-size", type=int, default=4, help="rollouts per group (default 4)")
    parser.add_argument(
        "--backend", default="bwrap", help="terminal backend: bwrap (default), docker, local or sandbox"
    )
    parser.add_argument("--out", default="data/terminal_tasks_demo.jsonl", help="jsonl of scored groups")
    parser.add_argument("--seed", type=int, default=0, help="seed of the scripted policy's choices")
    parser.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="KIND@TURN",
        help="make the scripted server misbehave on model turn TURN (0: the first) of some tasks, to see failed "
        "rollouts dropped with their cause (repeatable; e.g. http_500@1 nan_logprob@2). KIND is one of "
        "hermes_env.testing.scripted_vllm.FAULT_KINDS",
    )
    args, passthrough = parser.parse_known_args(argv)

    from transformers import AutoTokenizer

    from hermes_env.env.dataset import load_rows
    from hermes_env.envs import default_tokenizer_name
    from hermes_env.testing.policies import SolutionPolicy
    from hermes_env.testing.scripted_vllm import ScriptedVLLMServer

    backend = args.backend
    if backend == "bwrap":
        from hermes_env.isolation import bwrap_problem

        problem = bwrap_problem()
        if problem is not None:
            print(f"demo: bubblewrap is unusable here ({problem}); running tools with --backend local", file=sys.stderr)
            backend = "local"
    tokenizer_name = default_tokenizer_name()
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_name)
    rows = load_rows(str(TASKS_PATH))
    policy = SolutionPolicy(rows, seed=args.seed)
    responder = policy.vllm_responder
    for j, spec in enumerate(args.fault):
        responder = _fault(responder, spec, [r["prompt"] for r in rows[j :: len(args.fault) + 1]], parser)
    # The demo prints a short header instead of atroposlib's full config dump and its warning
    # about a local base URL (the scripted server is local on purpose).
    import atroposlib.envs.base as atropos_base

    atropos_base.rprint = lambda *a, **k: None
    warnings.filterwarnings("ignore", message="You are using a local Base URL")
    with ScriptedVLLMServer(tokenizer, responder, model_name="scripted-policy") as server:
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


def _fault(responder: Any, spec: str, prompts: list[str], parser: argparse.ArgumentParser) -> Any:
    """``responder`` failing as ``KIND@TURN`` says for the tasks whose prompt is in ``prompts``."""
    from hermes_env.testing.scripted_vllm import FAULT_KINDS, FaultAtTurn

    kind, _, turn = spec.partition("@")
    if kind not in FAULT_KINDS or not turn.isdigit():
        parser.error(f"--fault {spec!r}: expected KIND@TURN with KIND one of {', '.join(FAULT_KINDS)}")
    return FaultAtTurn(
        responder, kind, turn=int(turn), when=lambda r: any(p in r.prompt_text for p in prompts)  # type: ignore[arg-type]
    )


def main() -> None:
    configure_logging()
    if len(sys.argv) > 1 and sys.argv[1] == "demo":
        demo(sys.argv[2:])
    else:
        run_cli(TerminalTasksEnv)


if __name__ == "__main__":
    main()
