"""``demo``: an environment's ``process`` run end to end on this machine, with no model.

A SCRIPTED policy server speaking vLLM's ``/generate`` (:mod:`hermes_env.testing.scripted_vllm`)
answers from the tasks' reference solutions (:class:`~hermes_env.testing.policies.SolutionPolicy`,
sometimes wrongly, so rewards vary), in Phase 2 with the bundled Qwen3 tokenizer; the environment
runs atroposlib's ``process`` against it and writes scored groups. The example environments and
``python -m hermes_env.envs.terminal_tasks demo`` share this runner.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hermes_env.env.cli import run_cli


def run_demo(
    env_cls: Any,
    argv: Sequence[str],
    *,
    prog: str,
    description: str | None,
    tasks: Sequence[Mapping[str, Any]],
    default_out: str,
    config_path: Path | None = None,
    default_backend: str | None = "bwrap",
    default_groups: int = 8,
    default_group_size: int = 4,
    policy_options: Mapping[str, Any] | None = None,
) -> None:
    """Parse the demo's flags, start the scripted server and run ``process`` (other flags pass on).

    ``default_backend=None``: the environment picks its own terminal backend (no ``--backend`` flag).
    """
    parser = argparse.ArgumentParser(
        prog=prog, description=description, epilog="Any other --env.* / --openai.* flag is passed on to `process`."
    )
    parser.add_argument(
        "--groups", type=int, default=default_groups, help=f"groups to write (default {default_groups})"
    )
    parser.add_argument(
        "--group-size", type=int, default=default_group_size, help=f"rollouts per group (default {default_group_size})"
    )
    if default_backend is not None:
        parser.add_argument(
            "--backend",
            default=default_backend,
            help=f"terminal backend: {default_backend} (default), docker, local or sandbox",
        )
    parser.add_argument("--out", default=default_out, help=f"jsonl of scored groups (default {default_out})")
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

    from hermes_env.envs import default_tokenizer_name
    from hermes_env.testing.policies import SolutionPolicy
    from hermes_env.testing.scripted_vllm import ScriptedVLLMServer

    backend = getattr(args, "backend", None)
    if backend == "bwrap":
        from hermes_env.isolation import bwrap_problem

        problem = bwrap_problem()
        if problem is not None:
            print(f"demo: bubblewrap is unusable here ({problem}); running tools with --backend local", file=sys.stderr)
            backend = "local"
    tokenizer_name = default_tokenizer_name()
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_name)
    policy = SolutionPolicy(tasks, seed=args.seed, **dict(policy_options or {}))
    responder = policy.vllm_responder
    for j, spec in enumerate(args.fault):
        prompts = [str(t["prompt"]) for t in list(tasks)[j :: len(args.fault) + 1]]
        responder = _fault(responder, spec, prompts, parser)
    # A short header instead of atroposlib's full config dump and its warning about a local base URL
    # (the scripted server is local on purpose).
    import atroposlib.envs.base as atropos_base

    atropos_base.rprint = lambda *a, **k: None
    warnings.filterwarnings("ignore", message="You are using a local Base URL")
    with ScriptedVLLMServer(tokenizer, responder, model_name="scripted-policy") as server:
        print(
            f"demo: {env_cls.name} `process`, Phase 2 against a SCRIPTED vLLM /generate policy (no model) at "
            f"{server.url}\ndemo: {args.groups} groups x {args.group_size} rollouts"
            + (f", tools in {backend}" if backend else "")
            + f", tokenizer {tokenizer_name}",
            file=sys.stderr,
        )
        sys.argv = [
            f"{sys.argv[0]}",
            "process",
            *(["--config", str(config_path)] if config_path is not None else []),
            "--openai.base_url", server.base_url,
            "--openai.server_type", "vllm",
            "--openai.model_name", "scripted-policy",
            "--openai.tokenizer_name", tokenizer_name,
            "--env.tokenizer_name", tokenizer_name,
            *(["--env.terminal_backend", backend] if backend else []),
            "--env.total_steps", str(args.groups),
            "--env.group_size", str(args.group_size),
            "--env.data_path_to_save_groups", args.out,
            "--env.seed", str(args.seed),
            "--env.use_wandb", "false",
            *passthrough,
        ]  # fmt: skip
        run_cli(env_cls)


def _fault(responder: Any, spec: str, prompts: list[str], parser: argparse.ArgumentParser) -> Any:
    """``responder`` failing as ``KIND@TURN`` says for the tasks whose prompt is in ``prompts``."""
    from hermes_env.testing.scripted_vllm import FAULT_KINDS, FaultAtTurn

    kind, _, turn = spec.partition("@")
    if kind not in FAULT_KINDS or not turn.isdigit():
        parser.error(f"--fault {spec!r}: expected KIND@TURN with KIND one of {', '.join(FAULT_KINDS)}")
    return FaultAtTurn(
        responder,
        kind,
        turn=int(turn),
        when=lambda r: any(p in r.prompt_text for p in prompts),  # type: ignore[arg-type]
    )
