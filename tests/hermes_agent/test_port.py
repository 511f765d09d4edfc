"""hermes_env.port: only import statements change, each upstream module maps to hermes_env.hermes_agent.<same>."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hermes_env.errors import PortError
from hermes_env.port import (
    DEFAULT_PACKAGE,
    infer_package,
    is_framework_module,
    map_module,
    module_file,
    port_source,
    resolve_module,
    tree_root,
    upstream_root,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

T = "hermes_env.hermes_agent"
PYTHON_DIR = Path(__file__).resolve().parents[2] / "python"


def everything_exists(_name: str) -> bool:
    return True


# -- the mapping, a pure function ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("module", "level", "package", "expected"),
    [
        ("environments.agent_loop", 0, DEFAULT_PACKAGE, f"{T}.environments.agent_loop"),
        (
            "environments.benchmarks.terminalbench_2.terminalbench2_env",
            0,
            DEFAULT_PACKAGE,
            f"{T}.environments.benchmarks.terminalbench_2.terminalbench2_env",
        ),
        ("model_tools", 0, DEFAULT_PACKAGE, f"{T}.model_tools"),
        ("toolsets", 0, DEFAULT_PACKAGE, f"{T}.toolsets"),
        ("toolset_distributions", 0, DEFAULT_PACKAGE, f"{T}.toolset_distributions"),
        ("tools", 0, DEFAULT_PACKAGE, f"{T}.tools"),
        ("tools.terminal_tool", 0, DEFAULT_PACKAGE, f"{T}.tools.terminal_tool"),
        ("atropos.envs.agent_env", 0, DEFAULT_PACKAGE, f"{T}.atropos.envs.agent_env"),
        # upstream's atropos/envs relative layout
        ("agent", 2, "atropos.envs", f"{T}.atropos.agent"),
        ("tools", 2, "atropos.envs", f"{T}.atropos.tools"),
        ("tools.tool_executor", 2, "atropos.envs", f"{T}.atropos.tools.tool_executor"),
        ("backends.docker_direct_backend", 2, "atropos.envs", f"{T}.atropos.backends.docker_direct_backend"),
        ("agent_env", 1, "atropos.envs", f"{T}.atropos.envs.agent_env"),
        (None, 1, "atropos.envs", f"{T}.atropos.envs"),
        (None, 2, "atropos.envs", f"{T}.atropos"),
        (
            "endless_terminals_env",
            1,
            "environments.endless_terminals",
            f"{T}.environments.endless_terminals.endless_terminals_env",
        ),
        # not hermes-agent's: left alone
        ("atroposlib.envs.base", 0, DEFAULT_PACKAGE, None),
        ("pydantic", 0, DEFAULT_PACKAGE, None),
        ("datasets", 0, DEFAULT_PACKAGE, None),
        ("os.path", 0, DEFAULT_PACKAGE, None),
        ("environments_extra", 0, DEFAULT_PACKAGE, None),
        (f"{T}.environments.agent_loop", 0, DEFAULT_PACKAGE, None),  # already ported
        ("helpers", 1, "mypkg.sub", None),  # the caller's own package
    ],
)
def test_mapping_table(module: str | None, level: int, package: str, expected: str | None) -> None:
    assert map_module(resolve_module(module, level, package)) == expected


@pytest.mark.parametrize(("module", "level"), [("agent", 3), (None, 3), ("x", 5)])
def test_relative_import_above_the_package_is_an_error(module: str | None, level: int) -> None:
    with pytest.raises(PortError, match="above the top of package 'atropos.envs'"):
        resolve_module(module, level, "atropos.envs")


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/src/hermes-agent/atropos/envs/endless_terminals_env.py", "atropos.envs"),
        ("atropos/envs/__init__.py", "atropos.envs"),
        ("/x/environments/benchmarks/tblite/tblite_env.py", "environments.benchmarks.tblite"),
        ("/x/environments/terminal_test_env.py", "environments"),
        ("/x/environments/endless_terminals/__init__.py", "environments.endless_terminals"),
        ("/x/my-envs/env.py", None),
        ("/x/environments/not-a-package/env.py", None),
        ("env.py", None),
    ],
)
def test_infer_package(path: str, expected: str | None) -> None:
    assert infer_package(path) == expected


def test_upstream_root_and_module_files(tmp_path: Path) -> None:
    tb2 = tmp_path / "environments" / "benchmarks" / "terminalbench_2"
    tb2.mkdir(parents=True)
    (tb2 / "terminalbench2_env.py").touch()
    envs = tmp_path / "atropos" / "envs"
    envs.mkdir(parents=True)
    assert upstream_root(tb2 / "terminalbench2_env.py") == tmp_path
    assert upstream_root(envs / "test_env.py") == tmp_path
    assert upstream_root(tmp_path / "env.py") is None
    assert tree_root(tmp_path) == tmp_path
    assert tree_root(tb2) == tmp_path
    assert tree_root(tmp_path / "atropos") == tmp_path  # holds envs/, but atropos/ alone is not a package path
    module = "environments.benchmarks.terminalbench_2.terminalbench2_env"
    assert module_file(tmp_path, module) == tb2 / "terminalbench2_env.py"
    assert module_file(tmp_path, "environments.benchmarks") == tb2.parent
    assert module_file(tmp_path, "environments.agent_loop") is None
    assert module_file(tmp_path, "environments.not-a-module") is None


# -- rewriting -----------------------------------------------------------------------------------

EXAMPLE = '''\
"""An upstream-style env. from environments.agent_loop import X (in a docstring: untouched)."""
from __future__ import annotations

import os
from atroposlib.envs.base import ScoredDataGroup
from environments.agent_loop import (  # the loop
    AgentResult,
    HermesAgentLoop,  # and its result
)
from ..agent import AgentConfig, AgentResult as AR
from .agent_env import AgentEnv
import model_tools
import tools.terminal_tool
import tools.file_tools as ft, json
note = "é"; from tools.terminal_tool import cleanup_vm

try:
    from ..backends.docker_direct_backend import DockerDirectBackend
except ImportError:
    DockerDirectBackend = None


def later():
    from toolset_distributions import sample_toolsets_from_distribution
    if True: import toolsets
    return sample_toolsets_from_distribution
'''

EXPECTED = f'''\
"""An upstream-style env. from environments.agent_loop import X (in a docstring: untouched)."""
from __future__ import annotations

import os
from atroposlib.envs.base import ScoredDataGroup
from {T}.environments.agent_loop import (  # the loop
    AgentResult,
    HermesAgentLoop,  # and its result
)
from {T}.atropos.agent import AgentConfig, AgentResult as AR
from {T}.atropos.envs.agent_env import AgentEnv
from {T} import model_tools
from {T} import tools; import {T}.tools.terminal_tool
import {T}.tools.file_tools as ft; import json
note = "é"; from {T}.tools.terminal_tool import cleanup_vm

try:
    from {T}.atropos.backends.docker_direct_backend import DockerDirectBackend
except ImportError:
    DockerDirectBackend = None


def later():
    from {T}.toolset_distributions import sample_toolsets_from_distribution
    if True: from {T} import toolsets
    return sample_toolsets_from_distribution
'''


def test_rewrites_every_upstream_import_and_nothing_else() -> None:
    result = port_source(EXAMPLE, package="atropos.envs", exists=everything_exists)
    assert result.source == EXPECTED
    assert not result.unmapped
    assert [c.line for c in result.changes] == [6, 10, 11, 12, 13, 14, 15, 18, 24, 25]
    first = result.changes[0]
    assert first.old.startswith("from environments.agent_loop import (")
    assert first.new.startswith(f"from {T}.environments.agent_loop import (")
    # idempotent
    again = port_source(result.source, package="atropos.envs", exists=everything_exists)
    assert again.source == result.source and not again.changes


def test_crlf_line_endings_survive() -> None:
    source = EXAMPLE.replace("\n", "\r\n")
    result = port_source(source, package="atropos.envs", exists=everything_exists)
    assert result.source == EXPECTED.replace("\n", "\r\n")


def test_unmapped_imports_are_named_and_left_as_written() -> None:
    def exists(name: str) -> bool:
        return name != f"{T}.atropos.backends.docker_direct_backend"

    result = port_source(EXAMPLE, package="atropos.envs", exists=exists)
    assert [(u.line, u.module) for u in result.unmapped] == [(18, "atropos.backends.docker_direct_backend")]
    assert "no module hermes_env.hermes_agent.atropos.backends.docker_direct_backend" in result.unmapped[0].reason
    assert "    from ..backends.docker_direct_backend import DockerDirectBackend\n" in result.source
    assert f"from {T}.atropos.agent import AgentConfig" in result.source


def test_a_relative_import_above_the_package_is_unmapped_not_fatal() -> None:
    result = port_source("from ....x import y\n", package="atropos.envs", exists=everything_exists)
    assert result.source == "from ....x import y\n"
    assert "above the top of package" in result.unmapped[0].reason


def test_not_python_is_refused() -> None:
    with pytest.raises(PortError, match="not valid Python"):
        port_source("def broken(:\n")


# -- the invariant: the output differs from the input only in import statements --------------------


def _import_spans(source: str) -> list[tuple[int, int]]:
    """Character spans of the import statements; ``a; b`` counts as one span when both are imports."""
    from hermes_env.port import _Positions

    positions = _Positions(source)
    nodes = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Import | ast.ImportFrom)]
    spans = sorted(
        (positions.offset(n.lineno, n.col_offset), positions.offset(n.end_lineno, n.end_col_offset)) for n in nodes
    )
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and re.fullmatch(r"[ \t]*;[ \t]*", source[merged[-1][1] : start]):
            merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def _without_imports(source: str) -> list[str]:
    """The source cut at its import statements: the pieces between them."""
    pieces, last = [], 0
    for start, end in _import_spans(source):
        pieces.append(source[last:start])
        last = end
    pieces.append(source[last:])
    return pieces


class _DropImports(ast.NodeTransformer):
    def visit_Import(self, node: ast.Import) -> None:
        return None

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        return None


def _ast_without_imports(source: str) -> str:
    return ast.dump(_DropImports().visit(ast.parse(source)), include_attributes=False)


def _bound_names(source: str) -> list[set[str]]:
    """Per run of ``;``-joined import statements: the names they bind."""
    result = []
    positions_source = source
    for start, end in _import_spans(positions_source):
        names: set[str] = set()
        tree = ast.parse(source[start:end].strip())
        for node in tree.body:
            assert isinstance(node, ast.Import | ast.ImportFrom)
            for alias in node.names:
                if alias.asname:
                    names.add(alias.asname)
                elif isinstance(node, ast.Import):
                    names.add(alias.name.split(".")[0])
                else:
                    names.add(alias.name)
        result.append(names - {"hermes_env"})
    return result


def assert_only_imports_changed(before: str, after: str) -> None:
    assert _without_imports(before) == _without_imports(after)
    assert _ast_without_imports(before) == _ast_without_imports(after)


UPSTREAM = [
    "environments.agent_loop",
    "environments.tool_context",
    "environments.benchmarks.terminalbench_2.terminalbench2_env",
    "model_tools",
    "toolsets",
    "toolset_distributions",
    "tools",
    "tools.terminal_tool",
    "atropos.envs.agent_env",
]
THIRD_PARTY = ["atroposlib.envs.base", "pydantic", "datasets", "os.path", "json"]
RELATIVE = [".agent_env", "..agent", "..tools", "..tools.tool_executor", "..backends.base", ".", ".."]
names = st.lists(st.sampled_from(["A", "B", "load", "ToolCall", "AgentEnv"]), min_size=1, max_size=3, unique=True)
from_module = st.sampled_from(UPSTREAM + THIRD_PARTY + RELATIVE)


@st.composite
def from_statement(draw: st.DrawFn, top_level: bool) -> str:
    module = draw(from_module)
    chosen = draw(names)
    form = draw(
        st.sampled_from(
            ["plain", "alias", "parens", "backslash", "star"]
            if top_level
            else ["plain", "alias", "parens", "backslash"]
        )
    )
    if form == "alias":
        return f"from {module} import {chosen[0]} as _{chosen[0].lower()}" + "".join(f", {n}" for n in chosen[1:])
    if form == "parens":
        body = "".join(f"\n    {n},  # {n} é" for n in chosen)
        return f"from {module} import ({body}\n)"
    if form == "backslash":
        return f"from {module} \\\n    import {', '.join(chosen)}"
    if form == "star":
        return f"from {module} import *"
    return f"from {module} import {', '.join(chosen)}"


@st.composite
def import_statement(draw: st.DrawFn) -> str:
    modules = draw(st.lists(st.sampled_from(UPSTREAM + THIRD_PARTY), min_size=1, max_size=3))
    aliases = [f"{m} as m{i}" if draw(st.booleans()) else m for i, m in enumerate(modules)]
    return "import " + ", ".join(aliases)


@st.composite
def statement(draw: st.DrawFn, top_level: bool) -> str:
    kind = draw(st.sampled_from(["from", "import", "code", "code_then_import", "comment", "string"]))
    if kind == "from":
        return draw(from_statement(top_level))
    if kind == "import":
        return draw(import_statement())
    if kind == "code_then_import":
        return f'x = "é ü"; {draw(import_statement())}'
    if kind == "comment":
        return "# from environments.agent_loop import AgentResult"
    if kind == "string":
        return 's = """\nfrom tools.terminal_tool import cleanup_vm\nimport model_tools\n"""'
    return f"value_{draw(st.integers(0, 99))} = {draw(st.integers())}"


@st.composite
def upstream_style_file(draw: st.DrawFn) -> str:
    blocks = []
    for _ in range(draw(st.integers(1, 8))):
        shape = draw(st.sampled_from(["top", "def", "try", "if"]))
        if shape == "top":
            blocks.append(draw(statement(True)))
        elif shape == "def":
            body = draw(st.lists(statement(False), min_size=1, max_size=3))
            blocks.append(
                "def f():\n"
                + "".join(f"    {line}\n".replace("\n", "\n    ").rstrip(" ") for line in body)
                + "    return None"
            )
        elif shape == "try":
            indented = draw(from_statement(False)).replace("\n", "\n    ")
            blocks.append(f"try:\n    {indented}\nexcept ImportError:\n    pass")
        else:
            blocks.append(f"if True: {draw(import_statement())}")
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    return ("\n".join(blocks) + "\n").replace("\n", newline)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(source=upstream_style_file(), missing=st.sets(st.sampled_from(UPSTREAM), max_size=3))
def test_only_import_statements_change(source: str, missing: set[str]) -> None:
    ast.parse(source)  # the generator writes valid Python

    def exists(name: str) -> bool:
        return name.removeprefix(f"{T}.") not in missing

    result = port_source(source, package="atropos.envs", exists=exists)
    assert_only_imports_changed(source, result.source)
    assert _bound_names(source) == _bound_names(result.source)
    # every upstream import that exists is gone; the missing ones are named
    for node in ast.walk(ast.parse(result.source)):
        if isinstance(node, ast.ImportFrom):
            absolute = resolve_module(node.module, node.level, "atropos.envs")
            if map_module(absolute) is not None:
                assert absolute in missing, ast.unparse(node)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                assert map_module(alias.name) is None or alias.name in missing
    assert {u.module for u in result.unmapped} <= {*missing, *(m.lstrip(".") for m in RELATIVE)} | {
        resolve_module(m.lstrip(".") or None, len(m) - len(m.lstrip(".")), "atropos.envs") for m in RELATIVE
    }
    assert port_source(result.source, package="atropos.envs", exists=exists).source == result.source


# -- the real upstream files (a hermes-agent git checkout, when one is named) -----------------------

UPSTREAM_GIT = os.environ.get("HERMES_AGENT_GIT")
BRANCHES = ("main", "endless-terminals", "atropos-integrations", "endless-terminal-new")


@pytest.mark.skipif(not UPSTREAM_GIT, reason="set HERMES_AGENT_GIT to a hermes-agent git directory to port its files")
def test_every_upstream_environment_file_ports() -> None:
    assert UPSTREAM_GIT is not None
    ported = 0
    for branch in BRANCHES:
        listing = subprocess.run(
            ["git", "-C", UPSTREAM_GIT, "ls-tree", "-r", "--name-only", branch],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        for path in listing:
            if not path.endswith(".py") or not path.startswith(("environments/", "atropos/")):
                continue
            source = subprocess.run(
                ["git", "-C", UPSTREAM_GIT, "show", f"{branch}:{path}"], capture_output=True, text=True, check=True
            ).stdout
            package = infer_package(path) or DEFAULT_PACKAGE
            result = port_source(source, package=package, exists=everything_exists)
            assert_only_imports_changed(source, result.source)
            assert not result.unmapped, (branch, path, result.unmapped)
            for node in ast.walk(ast.parse(result.source)):
                if isinstance(node, ast.ImportFrom):
                    assert node.level == 0 or map_module(resolve_module(node.module, node.level, package)) is None
                    assert node.module is None or map_module(node.module) is None, (branch, path, node.module)
            assert port_source(result.source, package=package, exists=everything_exists).source == result.source
            ported += 1
    assert ported > 100


# -- the command ----------------------------------------------------------------------------------


def _run_port(args: list[str], fake_tree: Path | None, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -m hermes_env.port`` with ``fake_tree`` standing in for the hermes_env.hermes_agent modules."""
    code = (
        "import sys, hermes_env.hermes_agent as front\n"
        f"front.__path__[:] = [{str(fake_tree)!r}] if {fake_tree is not None} else front.__path__\n"
        "from hermes_env.port import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(PYTHON_DIR)}
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, cwd=cwd)


def _fake_front(root: Path, modules: list[str]) -> Path:
    for module in modules:
        parts = module.split(".")
        folder = root.joinpath(*parts[:-1])
        folder.mkdir(parents=True, exist_ok=True)
        for depth in range(len(parts)):
            (root.joinpath(*parts[:depth]) / "__init__.py").touch()
        (folder / f"{parts[-1]}.py").write_text("")
    return root


def test_command_writes_the_port_and_reports_changes(tmp_path: Path) -> None:
    front = _fake_front(
        tmp_path / "front",
        [
            "environments.agent_loop",
            "model_tools",
            "tools.terminal_tool",
            "tools.file_tools",
            "toolsets",
            "toolset_distributions",
            "atropos.agent",
            "atropos.envs.agent_env",
            "atropos.backends.docker_direct_backend",
        ],
    )
    upstream = tmp_path / "upstream" / "atropos" / "envs" / "my_env.py"
    upstream.parent.mkdir(parents=True)
    upstream.write_text(EXAMPLE, encoding="utf-8")
    out = tmp_path / "ported" / "env.py"
    run = _run_port([str(upstream), "-o", str(out)], front, tmp_path)
    assert run.returncode == 0, run.stderr
    assert out.read_text(encoding="utf-8") == EXPECTED
    assert (
        f"my_env.py:10: from ..agent import AgentConfig, AgentResult as AR -> from {T}.atropos.agent import"
        in run.stderr
    )
    assert "10 import(s) rewritten, 0 unmapped (relative imports resolved against package atropos.envs)" in run.stderr
    # to stdout, and idempotent
    again = _run_port([str(out)], front, tmp_path)
    assert again.returncode == 0 and again.stdout == EXPECTED
    assert "0 import(s) rewritten" in again.stderr


def test_command_names_unmapped_imports_and_fails_unless_allowed(tmp_path: Path) -> None:
    front = _fake_front(tmp_path / "front", ["environments.agent_loop"])
    (front / "environments" / "agent_loop.py").write_text("AgentResult = object\n")
    upstream = tmp_path / "env.py"
    source = (
        "from environments.agent_loop import AgentResult, HermesAgentLoop\n"
        "from tools.browser_tool import cleanup_browser\n"
    )
    upstream.write_text(source)
    out = tmp_path / "out.py"
    run = _run_port([str(upstream), "-o", str(out)], front, tmp_path)
    assert run.returncode == 1
    assert "env.py:2: cannot map 'from tools.browser_tool import cleanup_browser' (tools.browser_tool)" in run.stderr
    assert "no module hermes_env.hermes_agent.tools.browser_tool" in run.stderr
    assert "--allow-unmapped" in run.stderr
    # a name the target module lacks is a warning (the import itself is mapped)
    assert f"env.py:1: warning: {T}.environments.agent_loop lacks HermesAgentLoop;" in run.stderr
    assert out.read_text() == source.replace("from environments.", f"from {T}.environments.")
    allowed = _run_port([str(upstream), "-o", str(out), "--allow-unmapped"], front, tmp_path)
    assert allowed.returncode == 0, allowed.stderr


def test_command_package_flag_and_bad_input(tmp_path: Path) -> None:
    front = _fake_front(tmp_path / "front", ["environments.endless_terminals.endless_terminals_env"])
    upstream = tmp_path / "init.py"
    upstream.write_text("from .endless_terminals_env import EndlessTerminalsEnv\n")
    run = _run_port([str(upstream), "--package", "environments.endless_terminals"], front, tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout == f"from {T}.environments.endless_terminals.endless_terminals_env import EndlessTerminalsEnv\n"
    bad = _run_port([str(upstream), "--package", "not a package"], front, tmp_path)
    assert bad.returncode == 2 and "--package 'not a package' is not a dotted module path" in bad.stderr
    missing = _run_port([str(tmp_path / "nope.py")], front, tmp_path)
    assert missing.returncode == 2 and "cannot read" in missing.stderr and "nope.py" in missing.stderr
    (tmp_path / "broken.py").write_text("def f(:\n")
    broken = _run_port([str(tmp_path / "broken.py")], front, tmp_path)
    assert broken.returncode == 2 and "broken.py: not valid Python (line 1" in broken.stderr


# -- upstream files importing each other: the tree being ported -----------------------------------

SIBLING = "environments.benchmarks.terminalbench_2.terminalbench2_env"
TBLITE_STYLE = f"""\
from environments.agent_loop import HermesAgentLoop
from {SIBLING} import (
    TerminalBench2EvalConfig,
)
import {SIBLING} as tb2
"""


def test_a_module_of_the_ported_tree_stays_as_written() -> None:
    def exists(name: str) -> bool:
        return name == f"{T}.environments.agent_loop"

    def siblings(module: str) -> Path | None:
        return Path("/up/environments/benchmarks/terminalbench_2/terminalbench2_env.py") if module == SIBLING else None

    result = port_source(TBLITE_STYLE, package="environments.benchmarks.tblite", exists=exists, siblings=siblings)
    assert result.source == TBLITE_STYLE.replace("from environments.agent_loop", f"from {T}.environments.agent_loop")
    assert not result.unmapped
    assert [(k.line, k.module, k.path.name) for k in result.kept] == [
        (2, SIBLING, "terminalbench2_env.py"),
        (5, SIBLING, "terminalbench2_env.py"),
    ]
    # a framework module the front has goes to the front even where the tree holds upstream's own copy
    everywhere = port_source(
        TBLITE_STYLE, package="environments.benchmarks.tblite", exists=exists, siblings=lambda m: Path("/up/x.py")
    )
    assert f"from {T}.environments.agent_loop import HermesAgentLoop" in everywhere.source
    # not ported with it: unmapped, saying to port the tree
    alone = port_source(TBLITE_STYLE, package="environments.benchmarks.tblite", exists=exists, upstream_file=siblings)
    assert [u.line for u in alone.unmapped] == [2, 5] and not alone.kept
    assert "is upstream's own file /up/environments/benchmarks/terminalbench_2/terminalbench2_env.py" in (
        alone.unmapped[0].reason
    )
    assert "port the tree that holds it (python -m hermes_env.port /up -o OUTDIR)" in alone.unmapped[0].reason


def test_an_environment_file_of_the_tree_wins_over_the_front_and_the_front_stands_in_without_it() -> None:
    def exists(name: str) -> bool:  # the front has both: a framework module and a Terminal-Bench 2 of its own
        return name in (f"{T}.environments.agent_loop", f"{T}.{SIBLING}")

    def siblings(module: str) -> Path | None:
        return Path(f"/up/{module.replace('.', '/')}.py")  # the tree holds upstream's copy of every module

    tree = port_source(TBLITE_STYLE, package="environments.benchmarks.tblite", exists=exists, siblings=siblings)
    assert tree.source == TBLITE_STYLE.replace("from environments.agent_loop", f"from {T}.environments.agent_loop")
    assert [k.module for k in tree.kept] == [SIBLING, SIBLING] and not tree.unmapped
    single = port_source(TBLITE_STYLE, package="environments.benchmarks.tblite", exists=exists)
    assert single.source == TBLITE_STYLE.replace("environments.", f"{T}.environments.")
    assert not single.kept and not single.unmapped


@pytest.mark.parametrize(
    ("module", "framework"),
    [
        ("environments.agent_loop", True),
        ("environments.hermes_base_env", True),
        ("environments.tool_call_parsers.hermes_parser", True),
        ("tools.terminal_tool", True),
        ("model_tools", True),
        ("atropos.backends.base", True),
        ("atropos.envs.agent_env", True),
        ("atropos.envs.swe_smith_oracle_env", False),
        ("environments.benchmarks.terminalbench_2.terminalbench2_env", False),
        ("environments.hermes_swe_env.hermes_swe_env", False),
    ],
)
def test_framework_modules_are_told_from_environment_files(module: str, framework: bool) -> None:
    assert is_framework_module(module) is framework


def _upstream_tree(root: Path) -> None:
    """A small tree in upstream's layout: environments/ (a benchmark importing another, putting the root on
    sys.path as upstream's do), atropos/envs (relative imports), and files that are not Python."""
    files = {
        "environments/__init__.py": "from environments.agent_loop import HermesAgentLoop\n",
        # upstream's own framework module, which the front replaces: its unmapped import does not count
        "environments/agent_loop.py": "from tools.browser_tool import cleanup_browser\n",
        "environments/benchmarks/__init__.py": "",
        "environments/benchmarks/terminalbench_2/__init__.py": "",
        "environments/benchmarks/terminalbench_2/terminalbench2_env.py": (
            "from environments.agent_loop import HermesAgentLoop\n\n"
            "class TerminalBench2EvalEnv:\n    loop = HermesAgentLoop\n"
        ),
        "environments/benchmarks/terminalbench_2/default.yaml": "env:\n  max_agent_turns: 60\n",
        "environments/benchmarks/tblite/__init__.py": "",
        "environments/benchmarks/tblite/tblite_env.py": (
            "import sys\nfrom pathlib import Path\n\n"
            "_repo_root = Path(__file__).resolve().parent.parent.parent.parent\n"
            "if str(_repo_root) not in sys.path:\n    sys.path.insert(0, str(_repo_root))\n\n"
            "from environments.benchmarks.terminalbench_2.terminalbench2_env import TerminalBench2EvalEnv\n\n"
            "class TBLiteEvalEnv(TerminalBench2EvalEnv):\n    pass\n\n"
            "if __name__ == '__main__':\n    print(TBLiteEvalEnv.loop.__module__)\n"
        ),
        "atropos/__init__.py": "",
        "atropos/envs/__init__.py": "",
        "atropos/envs/helpers.py": "WORD = 'sibling'\n",
        "atropos/envs/test_env.py": "from .agent_env import AgentEnv\nfrom .helpers import WORD\n",
        "README.md": "# upstream\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (root / "data.bin").write_bytes(bytes(range(256)))
    (root / "__pycache__").mkdir()
    (root / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\0")


def test_command_ports_a_tree_keeping_its_layout(tmp_path: Path) -> None:
    front = _fake_front(tmp_path / "front", ["environments.agent_loop", "atropos.envs.agent_env", SIBLING])
    (front / "environments" / "agent_loop.py").write_text("class HermesAgentLoop:\n    pass\n")
    (front / "atropos" / "envs" / "agent_env.py").write_text("class AgentEnv:\n    pass\n")
    # the front's own Terminal-Bench 2 (no `loop`): the tree's copy must win, or running tblite below fails
    (front / "environments/benchmarks/terminalbench_2/terminalbench2_env.py").write_text(
        "class TerminalBench2EvalEnv:\n    pass\n"
    )
    upstream = tmp_path / "hermes-agent"
    _upstream_tree(upstream)
    out = tmp_path / "ported"
    run = _run_port([str(upstream), "-o", str(out)], front, tmp_path)
    assert run.returncode == 0, run.stderr
    assert (
        "11 Python file(s), 3 import(s) rewritten, 0 unmapped, 2 kept as sibling import(s), 1 unmapped in files "
        f"{T} replaces (not counted)" in run.stderr
    )
    assert f"note: {upstream}/environments/agent_loop.py:1: cannot map 'from tools.browser_tool" in run.stderr
    assert f"(harmless: imports of this file go to {T}.environments.agent_loop)" in run.stderr
    tblite = out / "environments" / "benchmarks" / "tblite" / "tblite_env.py"
    assert tblite.read_text() == (upstream / "environments/benchmarks/tblite/tblite_env.py").read_text()
    assert (
        f"tblite_env.py:8: kept 'from {SIBLING} import TerminalBench2EvalEnv': {SIBLING} is a file of the ported tree"
        in run.stderr
    )
    assert "test_env.py:2: kept 'from .helpers import WORD': atropos.envs.helpers is a file" in run.stderr
    assert (out / "atropos/envs/test_env.py").read_text() == (
        f"from {T}.atropos.envs.agent_env import AgentEnv\nfrom .helpers import WORD\n"
    )
    assert (
        (out / "environments/benchmarks/terminalbench_2/terminalbench2_env.py")
        .read_text()
        .startswith(f"from {T}.environments.agent_loop import HermesAgentLoop\n")
    )
    # every other file copied byte for byte; caches left behind
    assert (out / "data.bin").read_bytes() == bytes(range(256))
    for name in ("README.md", "environments/benchmarks/terminalbench_2/default.yaml"):
        assert (out / name).read_bytes() == (upstream / name).read_bytes()
    assert not (out / "__pycache__").exists()
    # the ported benchmark runs, importing its ported sibling, which imports the front
    code = (
        "import runpy, sys, hermes_env.hermes_agent as front\n"
        f"front.__path__[:] = [{str(front)!r}]\n"
        "runpy.run_path(sys.argv[1], run_name='__main__')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(PYTHON_DIR)}
    ran = subprocess.run(
        [sys.executable, "-c", code, str(tblite)], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == f"{T}.environments.agent_loop\n"


def test_command_a_single_file_whose_sibling_is_not_ported_says_to_port_the_tree(tmp_path: Path) -> None:
    front = _fake_front(tmp_path / "front", ["environments.agent_loop"])
    upstream = tmp_path / "hermes-agent"
    _upstream_tree(upstream)
    run = _run_port(
        [str(upstream / "environments/benchmarks/tblite/tblite_env.py"), "-o", str(tmp_path / "t.py")], front, tmp_path
    )
    assert run.returncode == 1
    assert f"tblite_env.py:8: cannot map 'from {SIBLING} import TerminalBench2EvalEnv' ({SIBLING})" in run.stderr
    assert f"{SIBLING} is upstream's own file {upstream.resolve()}/environments/benchmarks/terminalbench_2/" in (
        run.stderr
    )
    assert f"port the tree that holds it (python -m hermes_env.port {upstream.resolve()} -o OUTDIR)" in run.stderr
    # with a front module of that name (hermes_env's own Terminal-Bench 2), the single file ports and imports it
    front = _fake_front(tmp_path / "front2", ["environments.agent_loop", SIBLING])
    with_front = _run_port(
        [str(upstream / "environments/benchmarks/tblite/tblite_env.py"), "-o", str(tmp_path / "t2.py")], front, tmp_path
    )
    assert with_front.returncode == 0, with_front.stderr
    assert f"from {T}.{SIBLING} import TerminalBench2EvalEnv\n" in (tmp_path / "t2.py").read_text()


def test_command_tree_bad_input(tmp_path: Path) -> None:
    front = _fake_front(tmp_path / "front", ["environments.agent_loop"])
    upstream = tmp_path / "hermes-agent"
    _upstream_tree(upstream)
    no_out = _run_port([str(upstream)], front, tmp_path)
    assert no_out.returncode == 2 and "is a folder: name the output folder with -o OUTDIR" in no_out.stderr
    inside = _run_port([str(upstream), "-o", str(upstream / "ported")], front, tmp_path)
    assert inside.returncode == 2 and "is inside the tree being ported" in inside.stderr
    package = _run_port([str(upstream), "-o", str(tmp_path / "o"), "--package", "atropos.envs"], front, tmp_path)
    assert package.returncode == 2 and "--package is for a single file" in package.stderr
    # a file that is not Python for this interpreter is named and copied as written; the rest is ported
    (upstream / "cli.py").write_text("def f(:\n")
    broken = _run_port([str(upstream), "-o", str(tmp_path / "b"), "--allow-unmapped"], front, tmp_path)
    assert broken.returncode == 1
    assert "cli.py: not valid Python (line 1" in broken.stderr
    assert "1 file(s) could not be ported (named above); copied as written" in broken.stderr
    assert (tmp_path / "b" / "cli.py").read_text() == "def f(:\n"
    assert (tmp_path / "b" / "environments/__init__.py").read_text().startswith(f"from {T}.environments.agent_loop")
