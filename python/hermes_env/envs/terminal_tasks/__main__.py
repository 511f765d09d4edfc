"""``python -m hermes_env.envs.terminal_tasks serve|process|evaluate|demo``.

``serve``/``process``/``evaluate`` are atroposlib's commands (``--config``, ``--env.*``, ``--openai.*``).
``demo`` runs ``process`` end to end on this machine with no model: a SCRIPTED policy server
speaking vLLM's ``/generate`` (hermes_env.testing.scripted_vllm) answers from the tasks'
reference solutions — sometimes wrongly, so rewards vary — in Phase 2 with the Qwen3
tokenizer, tools sandboxed by bubblewrap (``--backend local`` where bwrap is unavailable).
``demo --policy gguf`` samples the policy from SmolLM2-135M-Instruct on this CPU instead
(hermes_env.models.serve_gguf; the ``gguf`` extra), at temperature 1.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from hermes_env.env.cli import configure_logging, run_cli
from hermes_env.envs.terminal_tasks.env import CONFIG_PATH, TASKS_PATH, TerminalTasksEnv
from hermes_env.envs.terminal_tasks.gguf_policy import GGUF_CHAT_TEMPLATE, GGUF_PROCESS_ARGS

DEMO_DESCRIPTION = (
    "Runs terminal_tasks' process command end to end on this machine with no model: a SCRIPTED policy server "
    "speaking vLLM's /generate answers from the tasks' reference solutions (sometimes wrongly, so rewards vary), "
    "in Phase 2 with the bundled Qwen3 tokenizer, tools sandboxed by bubblewrap (local where bubblewrap is "
    "unusable). Writes the scored groups (jsonl), their HTML view and a summary table. With --policy gguf the "
    "policy is SmolLM2-135M-Instruct sampled on this CPU by llama.cpp (the gguf extra), at temperature 1."
)


def demo(argv: Sequence[str]) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m hermes_env.envs.terminal_tasks demo",
        description=DEMO_DESCRIPTION,
        epilog="Any other --env.* / --openai.* flag (and --verbose) is passed on to process.",
    )
    parser.add_argument(
        "--policy",
        choices=("scripted", "gguf"),
        default="scripted",
        help="scripted (default): reference solutions, no model; gguf: SmolLM2-135M sampled on this CPU by llama.cpp",
    )
    parser.add_argument("--groups", type=int, default=None, help="groups to write (default 8; 4 with --policy gguf)")
    parser.add_argument("--group-size", type=int, default=4, help="rollouts per group (default 4)")
    parser.add_argument("--backend", default="bwrap", help="terminal backend: bwrap (default), local or sandbox")
    parser.add_argument("--out", default="data/terminal_tasks_demo.jsonl", help="jsonl of scored groups")
    parser.add_argument("--seed", type=int, default=0, help="seed of the policy's choices / sampling")
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
    if args.groups is None:
        args.groups = 4 if args.policy == "gguf" else 8
    if args.fault and args.policy != "scripted":
        parser.error("--fault makes the scripted server misbehave; it works with --policy scripted only")

    backend = args.backend
    if backend == "bwrap":
        from hermes_env.isolation import bwrap_problem

        problem = bwrap_problem()
        if problem is not None:
            print(f"demo: bubblewrap is unusable here ({problem}); running tools with --backend local", file=sys.stderr)
            backend = "local"
    if args.policy == "gguf":
        policy_server = _gguf_policy(args.seed)
    else:
        policy_server = _scripted_policy(args.seed, args.fault, parser)
    with policy_server as policy:
        print(
            f"demo: terminal_tasks `process`, Phase 2 against {policy.description} at {policy.base_url}\n"
            f"demo: {args.groups} groups x {args.group_size} rollouts, tools in {backend}, "
            f"tokenizer {policy.tokenizer_name}",
            file=sys.stderr,
        )
        sys.argv = [
            f"{sys.argv[0]}",
            "process",
            "--config", str(CONFIG_PATH),
            "--openai.base_url", policy.base_url,
            "--openai.server_type", "vllm",
            "--openai.model_name", policy.model_name,
            "--openai.tokenizer_name", policy.tokenizer_name,
            "--env.tokenizer_name", policy.tokenizer_name,
            "--env.terminal_backend", backend,
            "--env.total_steps", str(args.groups),
            "--env.group_size", str(args.group_size),
            "--env.data_path_to_save_groups", args.out,
            "--env.seed", str(args.seed),
            "--env.use_wandb", "false",
            *policy.process_args,
            *passthrough,
        ]  # fmt: skip
        run_cli(TerminalTasksEnv)


@dataclass(frozen=True)
class _DemoPolicy:
    description: str
    base_url: str
    model_name: str
    tokenizer_name: str
    process_args: tuple[str, ...] = ()


@contextmanager
def _scripted_policy(seed: int, faults: list[str], parser: argparse.ArgumentParser) -> Iterator[_DemoPolicy]:
    """The SCRIPTED /generate server answering from the tasks' reference solutions (no model), with any faults."""
    from hermes_env.env.dataset import load_rows
    from hermes_env.envs import default_tokenizer_name
    from hermes_env.resources import load_tokenizer
    from hermes_env.testing.policies import SolutionPolicy
    from hermes_env.testing.scripted_vllm import ScriptedVLLMServer

    tokenizer_name = default_tokenizer_name()
    tokenizer = load_tokenizer(tokenizer_name)
    rows = load_rows(str(TASKS_PATH))
    responder = SolutionPolicy(rows, seed=seed).vllm_responder
    for j, spec in enumerate(faults):
        responder = _fault(responder, spec, [r["prompt"] for r in rows[j :: len(faults) + 1]], parser)
    with ScriptedVLLMServer(tokenizer, responder, model_name="scripted-policy") as server:
        description = "a SCRIPTED vLLM /generate policy (no model)"
        yield _DemoPolicy(description, server.base_url, "scripted-policy", tokenizer_name)


@contextmanager
def _gguf_policy(seed: int) -> Iterator[_DemoPolicy]:
    """SmolLM2-135M-Instruct served by hermes_env.models.serve_gguf (llama.cpp on this CPU), temperature 1."""
    from hermes_env.models import smollm2_gguf
    from hermes_env.models.process import GGUFServerProcess

    try:
        model = smollm2_gguf()
        import llama_cpp  # noqa: F401 - checked here so a missing extra is one clear line, not a server traceback
    except ModuleNotFoundError as err:
        raise SystemExit(f"error: --policy gguf needs hermes_env's gguf extra ({err})") from None
    with GGUFServerProcess(model, chat_template=GGUF_CHAT_TEMPLATE, args=["--seed", str(seed)]) as server:
        yield _DemoPolicy(
            f"SmolLM2-135M-Instruct (GGUF, llama.cpp on CPU, temperature 1; {GGUF_CHAT_TEMPLATE} template)",
            server.base_url,
            server.model_name,
            str(server.tokenizer_dir),
            GGUF_PROCESS_ARGS,
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


DEMO_HELP = "run process end to end on this machine against a scripted policy server (no model, no GPU)"


def main() -> None:
    configure_logging()
    if len(sys.argv) > 1 and sys.argv[1] == "demo":
        demo(sys.argv[2:])
    else:
        run_cli(TerminalTasksEnv, extra_commands={"demo": DEMO_HELP})


if __name__ == "__main__":
    main()
