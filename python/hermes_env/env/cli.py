"""Command-line entry point of every environment (``Env.cli()``, ``python -m hermes_env.environments.<name>``).

atroposlib's ``cli()`` provides ``serve``/``process``/``evaluate``; this wrapper
- turns the errors a user can cause (a bad flag value, a missing dataset file, an unknown toolset, a
  phase the server cannot provide, a tokenizer that cannot be loaded) into one ``error: ...`` message
  and exit status 2, instead of a traceback;
- starts quietly: atroposlib's dump of the whole configuration (~80 lines) and its warning that the
  server URL is local appear only with ``--verbose`` (the preflight check tells whether a server answers);
- prints a short top-level ``--help`` that lists every command, the environment's own ones included;
- exits with status 130 and no traceback on Ctrl-C.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from hermes_env.errors import ConfigError, DatasetError, PhaseError, TokenizerUnavailable

VERBOSE_FLAG = "--verbose"

#: The command line usage lines show when a launcher knows it better than ``__main__`` does (``hermes-env run NAME``).
program_override: str | None = None

COMMANDS = {
    "serve": "roll out groups and send them to atroposlib's run-api, where a trainer pulls batches",
    "process": "roll out --env.total_steps groups and write them to a jsonl and its HTML view (no trainer)",
    "evaluate": "run the evaluation items once each and print the metrics",
}


def configure_logging() -> None:
    """Warnings and errors only (``HERMES_LOG_LEVEL=INFO`` for more), so the progress bar stays readable.

    atroposlib sets its base-env logger to DEBUG itself; it is brought down to the same level.
    """
    level = os.environ.get("HERMES_LOG_LEVEL", "WARNING").upper()
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    for name in ("atroposlib", "atroposlib.envs.base", "httpx"):
        logging.getLogger(name).setLevel(level)


def format_validation_error(err: ValidationError) -> str:
    lines = []
    for problem in err.errors():
        where = ".".join(str(p) for p in problem.get("loc", ())) or "config"
        lines.append(f"  {where}: {str(problem.get('msg', '')).removeprefix('Value error, ')}")
    return f"invalid configuration ({err.title}):\n" + "\n".join(lines)


def program_name() -> str:
    """How the user started this program: ``python -m pkg.mod`` or ``python script.py`` (or ``program_override``)."""
    if program_override is not None:
        return program_override
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    if spec is not None and spec.name:
        return f"python -m {spec.name.removesuffix('.__main__')}"
    return f"python {os.path.basename(sys.argv[0])}"


def top_level_help(env_cls: Any, extra_commands: Mapping[str, str] | None = None) -> str:
    commands = {**COMMANDS, **(extra_commands or {})}
    width = max(len(name) for name in commands)
    prog = program_name()
    lines = [
        f"usage: {prog} {{{','.join(commands)}}} [options]",
        "",
        f"{env_cls.name or env_cls.__name__}: a hermes_env environment (atroposlib's serve/process/evaluate)",
        "",
        "commands:",
        *(f"  {name.ljust(width)}  {text}" for name, text in commands.items()),
        "",
        "options of serve/process/evaluate ('<command> --help' lists every field):",
        "  --config FILE            YAML file with env: and openai: sections (flags override it)",
        "  --env.NAME VALUE         any environment field, e.g. --env.total_steps 8",
        "  --openai.NAME VALUE      the inference server: base_url, server_type, model_name, tokenizer_name",
        f"  {VERBOSE_FLAG.ljust(23)}  print the whole configuration at start",
    ]
    return "\n".join(lines)


def quiet_start() -> None:
    """Silence atroposlib's configuration dump and its local-URL warning (``--verbose`` keeps them)."""
    import atroposlib.envs.base as atropos_base

    atropos_base.rprint = lambda *args, **kwargs: None
    warnings.filterwarnings("ignore", message="You are using a local Base URL")


def run_cli(env_cls: Any, extra_commands: Mapping[str, str] | None = None) -> None:
    """atroposlib's ``cli()`` for ``env_cls``, with one-line user errors, a quiet start and a top-level help.

    ``extra_commands`` (name -> one line) are listed by ``--help``; the caller dispatches them itself.
    """
    from atroposlib.envs.base import BaseEnv

    args = sys.argv[1:]
    if not args or args[0] in ("-h", "--help"):
        print(top_level_help(env_cls, extra_commands))
        sys.exit(0 if args else 2)
    if VERBOSE_FLAG in args:
        sys.argv = [arg for arg in sys.argv if arg != VERBOSE_FLAG]
    else:
        quiet_start()
    # argparse names the program after argv[0]: show the command the user typed, not "__main__.py".
    sys.argv[0] = program_name()
    try:
        BaseEnv.cli.__func__(env_cls)  # type: ignore[attr-defined]
    except ValidationError as err:
        sys.exit(f"error: {format_validation_error(err)}")
    except (ConfigError, DatasetError, PhaseError, TokenizerUnavailable) as err:
        sys.exit(f"error: {err}")
    except KeyboardInterrupt:
        # Ctrl-C outside process mode's own handling (start-up, a second Ctrl-C): no traceback.
        print("interrupted", file=sys.stderr)
        sys.exit(130)
