"""``python -m hermes_env.environments.terminal_tasks serve|process|evaluate|demo``.

``serve``/``process``/``evaluate`` are atroposlib's commands (``--config``, ``--env.*``, ``--openai.*``).
``demo`` runs ``process`` end to end on this machine with no model: a SCRIPTED policy server
speaking vLLM's ``/generate`` (hermes_env.testing.scripted_vllm) answers from the tasks'
reference solutions — sometimes wrongly, so rewards vary — in Phase 2 with the Qwen3
tokenizer, tools sandboxed by bubblewrap (``--backend local`` where bwrap is unavailable), or
with ``--backend docker`` one container per rollout, where the tasks that need their own image
run in it (the others in the base image that ``scripts/setup.sh`` makes).
``demo --policy gguf`` samples the policy from SmolLM2-135M-Instruct on this CPU instead
(hermes_env.gguf.serve_gguf; the ``gguf`` extra), at temperature 1.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from hermes_env.env.cli import configure_logging, run_cli
from hermes_env.environments.terminal_tasks.env import CONFIG_PATH, TASKS_PATH, TerminalTasksEnv
from hermes_env.environments.terminal_tasks.gguf_policy import GGUF_CHAT_TEMPLATE, GGUF_PROCESS_ARGS

if TYPE_CHECKING:
    from hermes_env.testing.demo import DemoPolicy

DEMO_DESCRIPTION = (
    "Runs terminal_tasks' process command end to end on this machine with no model: a SCRIPTED policy server "
    "speaking vLLM's /generate answers from the tasks' reference solutions (sometimes wrongly, so rewards vary), "
    "in Phase 2 with the bundled Qwen3 tokenizer, tools sandboxed by bubblewrap (local where bubblewrap is "
    "unusable). Writes the scored groups (jsonl), their HTML view and a summary table. With --policy gguf the "
    "policy is SmolLM2-135M-Instruct sampled on this CPU by llama.cpp (the gguf extra), at temperature 1."
)
DEMO_HELP = "run process end to end on this machine against a scripted policy server (no model, no GPU)"


def demo(argv: Sequence[str]) -> None:
    from hermes_env.env.dataset import load_rows
    from hermes_env.testing.demo import DemoPolicyOption, run_demo

    run_demo(
        TerminalTasksEnv,
        argv,
        prog="python -m hermes_env.environments.terminal_tasks demo",
        description=DEMO_DESCRIPTION,
        tasks=load_rows(str(TASKS_PATH)),
        default_out="data/terminal_tasks_demo.jsonl",
        config_path=CONFIG_PATH,
        other_policies={
            "gguf": DemoPolicyOption(
                "SmolLM2-135M sampled on this CPU by llama.cpp", start=_gguf_policy, default_groups=4
            )
        },
    )


@contextmanager
def _gguf_policy(seed: int) -> Iterator[DemoPolicy]:
    """SmolLM2-135M-Instruct served by hermes_env.gguf.serve_gguf (llama.cpp on this CPU), temperature 1."""
    from hermes_env.gguf import smollm2_gguf
    from hermes_env.gguf.process import GGUFServerProcess
    from hermes_env.testing.demo import DemoPolicy

    try:
        model = smollm2_gguf()
        import llama_cpp  # noqa: F401 - checked here so a missing extra is one clear line, not a server traceback
    except ModuleNotFoundError as err:
        raise SystemExit(f"error: --policy gguf needs hermes_env's gguf extra ({err})") from None
    with GGUFServerProcess(model, chat_template=GGUF_CHAT_TEMPLATE, args=["--seed", str(seed)]) as server:
        yield DemoPolicy(
            f"SmolLM2-135M-Instruct (GGUF, llama.cpp on CPU, temperature 1; {GGUF_CHAT_TEMPLATE} template)",
            server.base_url,
            server.model_name,
            str(server.tokenizer_dir),
            GGUF_PROCESS_ARGS,
            serves_chat=True,
        )


def main() -> None:
    configure_logging()
    if len(sys.argv) > 1 and sys.argv[1] == "demo":
        demo(sys.argv[2:])
    else:
        run_cli(TerminalTasksEnv, extra_commands={"demo": DEMO_HELP})


if __name__ == "__main__":
    main()
