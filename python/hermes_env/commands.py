"""``hermes-env``: one console command for what hermes_env's ``python -m`` modules do.

Each command hands its arguments, untouched, to the module that implements it (run as ``python -m MODULE``
would run it), so ``hermes-env html --help`` is ``python -m hermes_env.html_view --help``. ``list`` shows
the environments registered in the ``hermes_env.environments`` entry-point group (the shipped ones, registered
in hermes_env's own pyproject.toml, and those of any installed package); ``run NAME ...`` runs one of them.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import runpy
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

PROG = "hermes-env"

#: The entry-point group an installed package registers its environments in: ``NAME = "module:EnvClass"``.
ENTRY_POINT_GROUP = "hermes_env.environments"


@dataclass(frozen=True)
class ModuleCommand:
    """A command that runs ``python -m module *leading_args ARGS``."""

    module: str
    help: str
    leading_args: tuple[str, ...] = ()

    def command_line(self) -> str:
        return " ".join(["python -m", self.module, *self.leading_args])


#: Every command but ``list`` and ``run``: the module that implements it (the one place a module is named).
MODULE_COMMANDS: dict[str, ModuleCommand] = {
    "demo": ModuleCommand(
        "hermes_env.environments.terminal_tasks",
        "run terminal_tasks end to end on this machine against a scripted policy (no model, no GPU)",
        ("demo",),
    ),
    "oracle": ModuleCommand(
        "hermes_env.environments.harbor", "check a folder of Harbor tasks with their reference solutions", ("oracle",)
    ),
    "export-tb2": ModuleCommand(
        "hermes_env.environments.harbor",
        "write Harbor tasks as the rows upstream's Terminal-Bench 2 environment loads",
        ("export-tb2",),
    ),
    "html": ModuleCommand("hermes_env.html_view", "render a jsonl of scored groups to one HTML page"),
    "recompute": ModuleCommand(
        "hermes_env.checks.recompute", "check written training data: teacher-forced logprobs of every sequence"
    ),
    "port": ModuleCommand("hermes_env.port", "port hermes-agent environment files by rewriting their imports"),
    "parse": ModuleCommand("hermes_env.parsers", "stream a model output through a tool-call parser"),
    "serve-gguf": ModuleCommand(
        "hermes_env.gguf.serve_gguf", "serve a GGUF model on this CPU behind vLLM's and OpenAI's HTTP APIs"
    ),
    "gguf-tokenizer": ModuleCommand(
        "hermes_env.gguf.gguf_tokenizer", "save a GGUF model's tokenizer as a Hugging Face tokenizer folder"
    ),
    "scripted-vllm": ModuleCommand(
        "hermes_env.testing.scripted_vllm", "a scripted stand-in for a vLLM server (no model)"
    ),
    "scripted-openai": ModuleCommand(
        "hermes_env.testing.scripted_openai", "a scripted stand-in for an OpenAI-compatible chat server (no model)"
    ),
    "trainer-stub": ModuleCommand(
        "hermes_env.testing.trainer_stub", "a stand-in trainer that pulls batches from atroposlib's run-api"
    ),
    "tool-server": ModuleCommand(
        "hermes_env.slot_pool.tool_server", "serve tools that must run outside the sandbox (web, APIs holding keys)"
    ),
    "containers": ModuleCommand(
        "hermes_env.containers", "set up the container engine and base image, or sweep leftover containers"
    ),
}

LIST_HELP = "the environments installed: name, description, module and how to run each"
RUN_HELP = "run an environment by name: hermes-env run NAME serve|process|evaluate|... (its --help lists them)"


@dataclass(frozen=True)
class Environment:
    """One entry of the ``hermes_env.environments`` group."""

    name: str
    value: str  # "module:EnvClass"
    distribution: str

    @property
    def module(self) -> str:
        return self.value.partition(":")[0].strip()

    def describe(self) -> str:
        return f"{self.name} = {self.value!r} (registered by {self.distribution})"


class _EntryPointError(Exception):
    """An environment entry point that cannot be found or loaded; the message says which and what to do.

    Private: ``main`` prints it as one ``error:`` line; it never leaves this module."""


def installed_environments() -> list[Environment]:
    """Every entry of the group, in name order; _EntryPointError if hermes_env's own are missing (a stale install)."""
    found = []
    for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = entry.dist.name if entry.dist is not None else "an unknown distribution"
        found.append(Environment(entry.name, entry.value, dist))
    if not any(env.distribution.replace("-", "_").lower() == "hermes_env" for env in found):
        raise _EntryPointError(
            f"hermes_env's installed metadata registers no environment in the {ENTRY_POINT_GROUP!r} entry-point "
            "group: it was installed from an older checkout; run bash scripts/setup.sh again"
        )
    return sorted(found, key=lambda env: (env.name, env.distribution))


def load_environment(env: Environment) -> type[Any]:
    """The environment class an entry names, checked to be an atroposlib ``BaseEnv`` subclass."""
    from atroposlib.envs.base import BaseEnv

    module, _, attribute = env.value.partition(":")
    if not module.strip() or not attribute.strip():
        raise _EntryPointError(
            f"environment entry point {env.describe()} is not 'module:EnvClass'; fix it in {env.distribution}'s "
            "package metadata"
        )
    try:
        obj = importlib.metadata.EntryPoint(env.name, env.value, ENTRY_POINT_GROUP).load()
    except Exception as err:  # any import-time failure of a third-party module: report it, keep the others
        raise _EntryPointError(
            f"environment entry point {env.describe()} cannot be loaded ({type(err).__name__}: {err}); "
            f"reinstall or fix {env.distribution}"
        ) from err
    if not (isinstance(obj, type) and issubclass(obj, BaseEnv)):
        raise _EntryPointError(
            f"environment entry point {env.describe()} names {obj!r}, which is not an atroposlib BaseEnv subclass; "
            f"fix it in {env.distribution}'s package metadata"
        )
    return obj


def _first_line(text: str | None) -> str:
    lines = (text or "").strip().splitlines()
    return lines[0].strip() if lines else ""


def description(env_cls: type[Any]) -> str:
    """The class's own docstring's first line, else its package's or module's."""
    own = env_cls.__dict__.get("__doc__")
    if own:
        return _first_line(own)
    module = sys.modules.get(env_cls.__module__)
    package = sys.modules.get(env_cls.__module__.rpartition(".")[0]) if "." in env_cls.__module__ else None
    return _first_line(getattr(module, "__doc__", None)) or _first_line(getattr(package, "__doc__", None))


def is_program_package(module: str) -> bool:
    """Whether ``module`` is a package with a ``__main__`` (its own command line, with any extra commands)."""
    spec = importlib.util.find_spec(module)
    return (
        spec is not None
        and spec.submodule_search_locations is not None
        and (importlib.util.find_spec(f"{module}.__main__") is not None)
    )


def how_to_run(env: Environment) -> str:
    return f"{PROG} run {env.name} serve|process|evaluate ...  ('{PROG} run {env.name} --help' lists its commands)"


def list_environments(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog=f"{PROG} list", description=LIST_HELP)
    parser.parse_args(argv)
    try:
        environments = installed_environments()
    except _EntryPointError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    broken = 0
    for env in environments:
        try:
            env_cls = load_environment(env)
        except _EntryPointError as err:
            print(f"error: {err}", file=sys.stderr)
            broken += 1
            continue
        print(env.name)
        # Package docstrings start "NAME: ..."; the name is already the heading.
        print(f"  {description(env_cls).removeprefix(f'{env.name}: ') or '(no docstring)'}")
        print(f"  module: {env.value} (from {env.distribution})")
        print(f"  run:    {how_to_run(env)}")
    for name in sorted({env.name for env in environments}):
        try:
            find_environment(environments, name)
        except _EntryPointError as err:  # one name registered by two distributions
            print(f"error: {err}", file=sys.stderr)
            broken += 1
    return 1 if broken else 0


def find_environment(environments: Sequence[Environment], name: str) -> Environment:
    matches = [env for env in environments if env.name == name]
    if not matches:
        raise _EntryPointError(f"no environment named {name!r} is installed; {PROG} list shows those that are")
    if len(matches) > 1:
        raise _EntryPointError(
            f"environment name {name!r} is registered by {', '.join(env.distribution for env in matches)}; "
            "uninstall one"
        )
    return matches[0]


def run_environment(argv: Sequence[str]) -> int:
    """``run NAME ARGS``: ``python -m PACKAGE ARGS`` when the entry's module is a package with a ``__main__``
    (its extra commands, e.g. ``demo``, included); otherwise atroposlib's ``EnvClass.cli()`` with ARGS."""
    parser = argparse.ArgumentParser(prog=f"{PROG} run", description=RUN_HELP, epilog=f"{PROG} list names them")
    parser.add_argument("name", help="an environment's name, as hermes-env list shows it")
    args = parser.parse_args(argv[:1])
    try:
        env = find_environment(installed_environments(), args.name)
    except _EntryPointError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    try:
        program = is_program_package(env.module)
    except Exception as err:  # the module or its package is missing or fails to import
        print(
            f"error: environment entry point {env.describe()} cannot be loaded ({type(err).__name__}: {err}); "
            f"reinstall or fix {env.distribution}",
            file=sys.stderr,
        )
        return 1
    if program:
        return run_module(env.module, argv[1:])
    try:
        env_cls = load_environment(env)
    except _EntryPointError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    from hermes_env.env import cli as env_cli

    saved, env_cli.program_override = env_cli.program_override, f"{PROG} run {env.name}"
    saved_argv, sys.argv = sys.argv, [env_cli.program_override, *argv[1:]]
    try:
        env_cls.cli()
    finally:
        env_cli.program_override, sys.argv = saved, saved_argv
    return 0


def run_module(module: str, argv: Sequence[str]) -> int:
    """Run ``module`` as ``python -m module ARGS`` does (its ``SystemExit`` passes through); 0 if it returns."""
    saved = sys.argv
    sys.argv = [module, *argv]  # runpy puts the module's file in argv[0], as python -m does
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    finally:
        sys.argv = saved
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="hermes_env's commands. Each passes its arguments to the module named beside it "
        "(python -m MODULE keeps working); COMMAND --help shows that module's options.",
        epilog=f"'{PROG} run NAME --help' lists an environment's commands (serve, process, evaluate, ...)",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    commands.add_parser("list", help=LIST_HELP, add_help=False)
    commands.add_parser("run", help=RUN_HELP, add_help=False)
    for name, command in MODULE_COMMANDS.items():
        commands.add_parser(name, help=f"{command.help} ({command.command_line()})", add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if not args:
        parser.print_help(sys.stderr)
        return 2
    # Only the command word is parsed here: the rest belongs to the command (its --help included).
    command = parser.parse_args(args[:1]).command
    rest = args[1:]
    if command == "list":
        return list_environments(rest)
    if command == "run":
        return run_environment(rest)
    target = MODULE_COMMANDS[command]
    return run_module(target.module, [*target.leading_args, *rest])


if __name__ == "__main__":
    sys.exit(main())
