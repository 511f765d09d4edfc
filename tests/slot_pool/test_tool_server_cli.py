"""``python -m hermes_env.slot_pool.tool_server --tools module:ATTR``: every bad spec is one clear error, no
traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hermes_env.slot_pool.tool_server import ExternalTool, load_tools

GOOD = """
from hermes_env.slot_pool.tool_server import ExternalTool

def _echo(args):
    return args.get("text", "")

TOOLS = [ExternalTool("echo", _echo, "repeat the text", {"type": "object", "properties": {"text": {"type": "string"}}})]
NOT_TOOLS = ["echo"]
NUMBER = 3
"""


@pytest.fixture
def tools_pkg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    pkg = tmp_path / "mytools"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "good.py").write_text(GOOD)
    (pkg / "broken.py").write_text("import no_such_dependency_xyz\n")
    (pkg / "raising.py").write_text("raise RuntimeError('config missing')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_a_list_of_external_tools_loads(tools_pkg: Path) -> None:
    (tool,) = load_tools("mytools.good:TOOLS")
    assert isinstance(tool, ExternalTool) and tool.name == "echo"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("mytools.good", "expects module:attribute"),
        ("nopkg_xyz.tools:TOOLS", "no module 'nopkg_xyz' importable from here"),
        ("mytools.broken:TOOLS", "no module 'no_such_dependency_xyz' importable from here"),
        ("mytools.raising:TOOLS", "importing mytools.raising raised RuntimeError: config missing"),
        ("mytools.good:MISSING", "module mytools.good has no attribute 'MISSING'"),
        ("mytools.good:NUMBER", "is a int; it must be a list of ExternalTool"),
        ("mytools.good:NOT_TOOLS", "must be a non-empty list of ExternalTool"),
    ],
)
def test_bad_specs_say_what_is_wrong(tools_pkg: Path, spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_tools(spec)


def test_the_command_reports_a_missing_module_in_one_line(tmp_path: Path) -> None:
    env = {**os.environ, "HERMES_TOOL_SERVER_TOKEN": "t" * 32}
    proc = subprocess.run(
        [sys.executable, "-m", "hermes_env.slot_pool.tool_server", "--tools", "mypkg.tools:TOOLS"],
        capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip() == (
        "error: --tools mypkg.tools:TOOLS: no module 'mypkg' importable from here; install the package that "
        "defines it or run from the folder that holds it (PYTHONPATH)"
    )
