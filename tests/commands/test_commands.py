"""``hermes-env``: every command reaches its module with its arguments untouched; ``list`` and ``run`` read the
``hermes_env.environments`` entry-point group, hermes_env's own entries as pyproject.toml registers them."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hermes_env import commands
from hermes_env.commands import ENTRY_POINT_GROUP, MODULE_COMMANDS, main

REPO = Path(__file__).resolve().parents[2]
SHIPPED = {
    "terminal_tasks": "hermes_env.environments.terminal_tasks:TerminalTasksEnv",
    "swe_lite": "hermes_env.environments.swe_lite:SweLiteEnv",
    "bench_eval": "hermes_env.environments.bench_eval:BenchEvalEnv",
    "harbor": "hermes_env.environments.harbor:HarborEnv",
}

# A module run again by runpy after an earlier test imported it warns that it is in sys.modules; harmless here.
pytestmark = pytest.mark.filterwarnings("ignore:.*found in sys.modules after import:RuntimeWarning")

THIRD_PARTY_MODULE = '''
"""hermes_env_test_thirdparty: an environment of another package."""
from hermes_env.env.base_env import HermesAgentBaseEnv


class ThirdPartyEnv(HermesAgentBaseEnv):
    """Counts sheep in a sandbox."""

    name = "sheep"


class NotAnEnv:
    pass
'''


@pytest.fixture(scope="module")
def hermes_env_metadata(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """hermes_env's dist-info as scripts/setup.sh installs it, written by maturin from this checkout's pyproject."""
    out = tmp_path_factory.mktemp("hermes_env_metadata")
    maturin = Path(sys.executable).with_name("maturin")
    subprocess.run(
        [str(maturin), "pep517", "write-dist-info", "--metadata-directory", str(out)],
        cwd=REPO,
        check=True,
        capture_output=True,
    )
    return out


@pytest.fixture
def installed(hermes_env_metadata: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This checkout's hermes_env metadata ahead of whatever the virtualenv holds (first on sys.path wins)."""
    monkeypatch.syspath_prepend(str(hermes_env_metadata))
    return hermes_env_metadata


def add_third_party(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entries: dict[str, str]) -> None:
    """An installed package "sheep-envs" (its module and its dist-info on sys.path) registering ``entries``."""
    (tmp_path / "hermes_env_test_thirdparty.py").write_text(THIRD_PARTY_MODULE)
    dist_info = tmp_path / "sheep_envs-1.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: sheep-envs\nVersion: 1.0\n")
    lines = [f"[{ENTRY_POINT_GROUP}]", *(f"{name} = {value}" for name, value in entries.items())]
    (dist_info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "hermes_env_test_thirdparty", raising=False)


def test_setup_installs_the_console_script_and_registers_the_shipped_environments(hermes_env_metadata: Path) -> None:
    (dist_info,) = hermes_env_metadata.glob("hermes_env-*.dist-info")
    entry_points = importlib.metadata.Distribution.at(dist_info).entry_points
    (script,) = entry_points.select(group="console_scripts", name="hermes-env")
    assert script.value == "hermes_env.commands:main"
    assert {entry.name: entry.value for entry in entry_points.select(group=ENTRY_POINT_GROUP)} == SHIPPED
    for name, value in SHIPPED.items():
        assert importlib.metadata.EntryPoint(name, value, ENTRY_POINT_GROUP).load().name == name


def test_list_shows_the_shipped_environments_and_a_third_party_one(
    installed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    add_third_party(tmp_path, monkeypatch, {"sheep": "hermes_env_test_thirdparty:ThirdPartyEnv"})
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for name, value in {**SHIPPED, "sheep": "hermes_env_test_thirdparty:ThirdPartyEnv"}.items():
        assert f"\n{name}\n" in f"\n{out}", out
        assert f"module: {value}" in out
        assert f"hermes-env run {name} serve|process|evaluate" in out
    assert "module: hermes_env_test_thirdparty:ThirdPartyEnv (from sheep-envs)" in out
    assert "  Counts sheep in a sandbox.\n" in out  # the class's docstring
    assert "  shell and file tasks" in out  # its module's docstring, less its "terminal_tasks: "


def test_a_bad_entry_point_is_named_and_does_not_hide_the_others(
    installed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    add_third_party(
        tmp_path,
        monkeypatch,
        {
            "sheep": "hermes_env_test_thirdparty:ThirdPartyEnv",
            "ghost": "hermes_env_test_no_such_module:GhostEnv",
            "plain": "hermes_env_test_thirdparty:NotAnEnv",
        },
    )
    assert main(["list"]) == 1
    captured = capsys.readouterr()
    assert "ghost = 'hermes_env_test_no_such_module:GhostEnv' (registered by sheep-envs) cannot be loaded" in (
        captured.err
    )
    assert "ModuleNotFoundError" in captured.err
    assert "plain = 'hermes_env_test_thirdparty:NotAnEnv'" in captured.err
    assert "not an atroposlib BaseEnv subclass" in captured.err
    for name in [*SHIPPED, "sheep"]:
        assert f"hermes-env run {name} " in captured.out
    assert "ghost" not in captured.out and "plain" not in captured.out


def test_one_name_registered_twice_is_an_error_naming_both(
    installed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    add_third_party(tmp_path, monkeypatch, {"harbor": "hermes_env_test_thirdparty:ThirdPartyEnv"})
    assert main(["run", "harbor", "--help"]) == 2
    assert "environment name 'harbor' is registered by hermes_env, sheep-envs; uninstall one" in (
        capsys.readouterr().err
    )


def test_a_stale_install_says_to_run_setup_again(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda **_: importlib.metadata.EntryPoints(()))
    assert main(["list"]) == 1
    assert "run bash scripts/setup.sh again" in capsys.readouterr().err


@pytest.mark.parametrize("name", sorted(MODULE_COMMANDS))
def test_each_command_hands_help_to_its_module(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    command = MODULE_COMMANDS[name]
    with pytest.raises(SystemExit) as exit_info:
        main([name, "--help"])
    assert exit_info.value.code == 0
    usage = capsys.readouterr().out.splitlines()[0]
    # The module's own usage line, naming it as python -m does (tool_server's parser names its file instead).
    prog = "tool_server.py" if name == "tool-server" else command.command_line()
    assert f"{usage} ".startswith(f"usage: {prog} "), usage


def test_arguments_reach_the_module_untouched(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from hermes_env.containers.config import podman_conf_path

    with pytest.raises(SystemExit) as exit_info:  # the module's own sys.exit(main())
        main(["containers", "config-path"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == str(podman_conf_path())
    with pytest.raises(SystemExit) as exit_info:  # html_view's own check of its argument, status 2
        main(["html", str(tmp_path / "missing.jsonl"), "--group", "3"])
    assert exit_info.value.code == 2
    assert f"error: {tmp_path / 'missing.jsonl'} is not a file" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        main(["parse", "--parser", "hermes", str(REPO / "examples" / "hermes_output.txt"), "--chunk", "7"])
    assert exit_info.value.code == 0
    assert "OpenAI message:" in capsys.readouterr().out


def test_run_hands_an_environment_package_its_arguments(installed: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "terminal_tasks", "--help"])
    assert exit_info.value.code == 0
    package = SHIPPED["terminal_tasks"].partition(":")[0]
    assert f"usage: python -m {package} {{serve,process,evaluate,demo}}" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "harbor", "oracle", "--help"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: python -m {SHIPPED['harbor'].partition(':')[0]} oracle")


def test_run_calls_a_third_party_environment_s_cli(
    installed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from hermes_env.env import cli as env_cli

    add_third_party(tmp_path, monkeypatch, {"sheep": "hermes_env_test_thirdparty:ThirdPartyEnv"})
    argv = list(sys.argv)
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "sheep", "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: hermes-env run sheep {serve,process,evaluate} [options]")
    assert "sheep: a hermes_env environment" in out
    assert env_cli.program_override is None and sys.argv == argv  # restored for whatever runs next


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["frobnicate"], "argument COMMAND: invalid choice: 'frobnicate'"),
        ([], "usage: hermes-env"),
        (["run"], "the following arguments are required: name"),
    ],
)
def test_usage_errors_exit_2(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    try:
        code = main(argv)
    except SystemExit as exit_info:
        code = exit_info.code
    assert code == 2
    assert message in capsys.readouterr().err


def test_run_of_an_unknown_environment_names_it(installed: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "no_such_env", "process"]) == 2
    assert "no environment named 'no_such_env' is installed; hermes-env list shows those that are" in (
        capsys.readouterr().err
    )


def test_python_dash_m_hermes_env_is_the_same_command(installed: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(installed), str(REPO / "python")])}
    done = subprocess.run(
        [sys.executable, "-m", "hermes_env", "run", "no_such_env"], env=env, capture_output=True, text=True
    )
    assert done.returncode == 2
    assert "no environment named 'no_such_env'" in done.stderr
    assert commands.PROG == "hermes-env"
