"""``demo``: an environment's ``process`` run end to end on this machine, with no model.

A SCRIPTED policy server speaking vLLM's ``/generate`` (:mod:`hermes_env.testing.scripted_vllm`)
answers from the tasks' reference solutions (:class:`~hermes_env.testing.policies.SolutionPolicy`,
sometimes wrongly, so rewards vary), in Phase 2 with the bundled Qwen3 tokenizer; the environment
runs atroposlib's ``process`` against it and writes scored groups. The example environments and
``python -m hermes_env.environments.terminal_tasks demo`` share this runner. An environment may offer other
policies (``--policy NAME``), e.g. terminal_tasks' ``gguf``: a real model sampled on this CPU.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes_env.env.cli import run_cli


@dataclass(frozen=True)
class DemoPolicy:
    """The running policy server a demo's ``process`` talks to."""

    description: str
    base_url: str
    model_name: str
    tokenizer_name: str
    process_args: tuple[str, ...] = ()
    serves_chat: bool = False  # also an OpenAI chat endpoint at base_url (a judge can use it)


@dataclass(frozen=True)
class DemoPolicyOption:
    """A ``--policy`` choice besides ``scripted``: ``start(seed)`` runs its server for the demo's duration."""

    help: str
    start: Callable[[int], AbstractContextManager[DemoPolicy]]
    default_groups: int | None = None


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
    other_policies: Mapping[str, DemoPolicyOption] | None = None,
) -> None:
    """Parse the demo's flags, start the scripted server and run ``process`` (other flags pass on).

    ``default_backend=None``: the environment picks its own terminal backend (no ``--backend`` flag).
    ``other_policies``: ``--policy`` choices besides the default ``scripted`` one.
    """
    others = dict(other_policies or {})
    parser = argparse.ArgumentParser(
        prog=prog,
        description=description,
        epilog="Any other --env.* / --openai.* flag (and --verbose) is passed on to process.",
    )
    if others:
        parser.add_argument(
            "--policy",
            choices=("scripted", *others),
            default="scripted",
            help="scripted (default): reference solutions, no model; "
            + "; ".join(f"{name}: {option.help}" for name, option in others.items()),
        )
    groups_help = f"groups to write (default {default_groups}"
    groups_help += "".join(
        f"; {option.default_groups} with --policy {name}"
        for name, option in others.items()
        if option.default_groups is not None
    )
    parser.add_argument("--groups", type=int, default=None, help=groups_help + ")")
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
    parser.add_argument("--seed", type=int, default=0, help="seed of the policy's choices (or sampling)")
    parser.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="KIND@TURN",
        help="make the scripted server misbehave on model turn TURN (0: the first) of some tasks, to see failed "
        "rollouts dropped with their cause (repeatable; e.g. http_500@1 nan_logprob@2). KIND is one of "
        "hermes_env.testing.scripted_vllm.FAULT_KINDS",
    )
    parser.add_argument(
        "--turn-credit",
        action="store_true",
        help="turn-level credit: built-in turn rewards ("
        + ", ".join(f"{k} {v:g}" for k, v in DEMO_TURN_REWARDS.items())
        + ") combined with the outcome into per-token advantages",
    )
    parser.add_argument(
        "--distill",
        action="store_true",
        help="on-policy distillation with the policy's own server as the teacher (top-5 at every trained token); "
        "in the hinted context when that server also serves chat (--policy gguf: the model judges itself)",
    )
    args, passthrough = parser.parse_known_args(argv)
    choice = getattr(args, "policy", "scripted")
    other = others.get(choice)
    if args.groups is None:
        args.groups = other.default_groups if other is not None and other.default_groups else default_groups
    if args.fault and other is not None:
        parser.error("--fault makes the scripted server misbehave; it works with --policy scripted only")

    backend = getattr(args, "backend", None)
    if backend == "bwrap":
        from hermes_env.isolation import bwrap_problem

        problem = bwrap_problem()
        if problem is not None:
            print(f"demo: bubblewrap is unusable here ({problem}); running tools with --backend local", file=sys.stderr)
            backend = "local"
    if other is not None:
        policy_server = other.start(args.seed)
    else:
        policy_server = _scripted_policy(tasks, args.seed, args.fault, policy_options or {}, parser)
    with policy_server as policy:
        print(
            f"demo: {env_cls.name} `process`, Phase 2 against {policy.description} at {policy.base_url}\n"
            f"demo: {args.groups} groups x {args.group_size} rollouts"
            + (f", tools in {backend}" if backend else "")
            + f", tokenizer {policy.tokenizer_name}",
            file=sys.stderr,
        )
        sys.argv = [
            f"{sys.argv[0]}",
            "process",
            *(["--config", str(config_path)] if config_path is not None else []),
            "--openai.base_url", policy.base_url,
            "--openai.server_type", "vllm",
            "--openai.model_name", policy.model_name,
            "--openai.tokenizer_name", policy.tokenizer_name,
            "--env.tokenizer_name", policy.tokenizer_name,
            *(["--env.terminal_backend", backend] if backend else []),
            "--env.total_steps", str(args.groups),
            "--env.group_size", str(args.group_size),
            "--env.data_path_to_save_groups", args.out,
            "--env.seed", str(args.seed),
            "--env.use_wandb", "false",
            *policy.process_args,
            *_feature_args(args, policy),
            *passthrough,
        ]  # fmt: skip
        run_cli(env_cls)


DEMO_TURN_REWARDS = {"tool_failed": -0.5, "command_failed": -0.5, "parse_issue": -0.5, "repeated_call": -0.25}


def _feature_args(args: argparse.Namespace, policy: DemoPolicy) -> list[str]:
    """``process`` flags for ``--turn-credit`` and ``--distill``."""
    import json

    out: list[str] = []
    if args.turn_credit:
        out += ["--env.turn_reward_builtins", json.dumps(DEMO_TURN_REWARDS)]
    if args.distill:
        out += ["--env.teacher_base_url", policy.base_url, "--env.teacher_top_k", "5"]
        if policy.serves_chat:
            out += ["--env.teacher_context", "hint", "--env.hint_judge_base_url", policy.base_url]
            out += ["--env.hint_judge_model", policy.model_name, "--env.hint_max_tokens", "96"]
    return out


@contextmanager
def _scripted_policy(
    tasks: Sequence[Mapping[str, Any]],
    seed: int,
    faults: list[str],
    policy_options: Mapping[str, Any],
    parser: argparse.ArgumentParser,
) -> Iterator[DemoPolicy]:
    """The SCRIPTED /generate server answering from the tasks' reference solutions (no model), with any faults."""
    from hermes_env.env.defaults import default_tokenizer_name
    from hermes_env.resources import load_tokenizer
    from hermes_env.testing.policies import SolutionPolicy
    from hermes_env.testing.scripted_vllm import ScriptedVLLMServer

    tokenizer_name = default_tokenizer_name()
    tokenizer = load_tokenizer(tokenizer_name)
    responder = SolutionPolicy(tasks, seed=seed, **dict(policy_options)).vllm_responder
    for j, spec in enumerate(faults):
        prompts = [str(t["prompt"]) for t in list(tasks)[j :: len(faults) + 1]]
        responder = _fault(responder, spec, prompts, parser)
    with ScriptedVLLMServer(tokenizer, responder, model_name="scripted-policy", max_recorded=64) as server:
        yield DemoPolicy(
            "a SCRIPTED vLLM /generate policy (no model)", server.base_url, "scripted-policy", tokenizer_name
        )


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
