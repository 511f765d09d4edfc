"""The package's imports follow its documented layers (``hermes_env._layers``), and nothing imports in a circle.

Python: every import of ``python/hermes_env`` read with ``ast`` (see ``hermes_env._layers`` for what
counts; ``if TYPE_CHECKING:`` imports are left out). Rust: the ``use`` and inline paths of
``rust/hermes_core`` (``crate::``, ``super::``, ``self::``), module to module.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hermes_env import _layers

REPO = Path(__file__).resolve().parents[2]
MAX_BACK_EDGES = 3


@pytest.fixture(scope="module")
def edges() -> list[_layers.Import]:
    return _layers.imports()


def _show(found: list[_layers.Import]) -> str:
    return "\n".join(f"  {e.importer}:{e.line} -> {e.imported}" for e in found)


def test_every_unit_is_in_one_layer() -> None:
    units = {_layers.unit_of(m) for m in _layers.modules()}
    placed = [u for layer in _layers.LAYERS for u in layer]
    assert len(placed) == len(set(placed)), f"a unit is in two layers of LAYERS: {placed}"
    missing = sorted(units - set(placed))
    assert not missing, f"packages/modules in no layer of hermes_env._layers.LAYERS: {missing}; add them there"
    gone = sorted(set(placed) - units)
    assert not gone, f"LAYERS names units that do not exist: {gone}"


def test_no_cycle_between_units(edges: list[_layers.Import]) -> None:
    found = _layers.cycles(_layers.unit_graph(edges))
    assert not found, f"units importing each other in a circle: {found}"


def test_no_cycle_between_modules(edges: list[_layers.Import]) -> None:
    graph: dict[str, set[str]] = {}
    for e in edges:
        graph.setdefault(e.importer, set()).add(e.imported)
    found = _layers.cycles(graph)
    assert not found, f"modules importing each other in a circle: {found}"


def test_imports_follow_the_layers(edges: list[_layers.Import]) -> None:
    allowed = _layers.ALLOWED_BACK_EDGES
    assert len(allowed) <= MAX_BACK_EDGES, f"at most {MAX_BACK_EDGES} allowed back-edges, not {len(allowed)}"
    wrong = [e for e in _layers.against_order(edges) if (e.importer, e.imported) not in allowed]
    assert not wrong, "imports against the layer order (hermes_env._layers.LAYERS):\n" + _show(wrong)
    used = {(e.importer, e.imported) for e in edges}
    stale = sorted(set(allowed) - used)
    assert not stale, f"ALLOWED_BACK_EDGES lists imports that no longer exist: {stale}"


def test_each_allowed_back_edge_is_explained_where_it_stands(edges: list[_layers.Import]) -> None:
    files = _layers.modules()
    for e in edges:
        if (e.importer, e.imported) in _layers.ALLOWED_BACK_EDGES:
            lines = files[e.importer].read_text().splitlines()
            near = lines[max(0, e.line - 3) : e.line]
            assert any("#" in line for line in near), f"{e.importer}:{e.line}: say why in a comment at the import"


def test_the_checker_sees_what_it_should(tmp_path: Path) -> None:
    """A made-up package: an import in a function, a circle, a TYPE_CHECKING import (left out), a lazy one."""
    pkg = tmp_path / "hermes_env"
    (pkg / "low").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "low" / "__init__.py").write_text("from . import a\n")
    (pkg / "low" / "a.py").write_text("def f():\n    from hermes_env.high import g\n")
    (pkg / "high.py").write_text(
        "from typing import TYPE_CHECKING\nfrom hermes_env.low import a\nif TYPE_CHECKING:\n    import hermes_env.x\n"
    )
    (pkg / "x.py").write_text("import hermes_env.low.a as a\n")
    (pkg / "y.py").write_text('__getattr__ = lazy_attributes(__name__, {"hermes_env.x": ("a",)})\n')
    found = {(e.importer, e.imported) for e in _layers.imports(pkg)}
    assert found == {
        ("hermes_env.low", "hermes_env.low.a"),
        ("hermes_env.low.a", "hermes_env.high"),
        ("hermes_env.high", "hermes_env.low.a"),
        ("hermes_env.x", "hermes_env.low.a"),
        ("hermes_env.y", "hermes_env.x"),
    }
    graph = _layers.unit_graph(_layers.imports(pkg))
    assert _layers.cycles(graph) == [["high", "low"]]


def _unit_name(text: str) -> str:
    return text.strip().removesuffix(".py").removesuffix("/")


def test_architecture_draws_the_same_layers_and_names_each_units_job() -> None:
    """ARCHITECTURE.md's layer map: a line per layer, top first (``N units``), and a line per unit with its job."""
    text = (REPO / "ARCHITECTURE.md").read_text()
    block = text.split("<!-- layers -->")[1].split("<!-- /layers -->")[0]
    lines = [line for line in block.splitlines() if line.strip() and not line.startswith("`")]
    rows = [re.match(r"\s?(\d+) (.+)", line) for line in lines]
    drawn = {int(m[1]): {_unit_name(u) for u in m[2].split("  ")[0].split(",")} for m in rows if m}
    want = dict(enumerate(map(set, _layers.LAYERS)))
    assert drawn == want, "ARCHITECTURE.md's layer map differs from hermes_env._layers.LAYERS"
    assert [int(m[1]) for m in rows if m] == sorted(want, reverse=True), "the layer map runs top first"
    for unit in (u for layer in _layers.LAYERS for u in layer):
        spelled = unit if unit in ("_core", "hermes_env") else f"{unit}/" if unit in PACKAGES else f"{unit}.py"
        job = re.compile(rf"^(\s?\d+ |\s+){re.escape(spelled)}\s{{2,}}\S", re.M)
        assert job.search(block), f"ARCHITECTURE.md's layer map gives no job for {spelled}"


PACKAGES = {p.name for p in _layers.package_dir().iterdir() if (p / "__init__.py").is_file()}


# -- Rust ------------------------------------------------------------------------------------------
RUST_SRC = REPO / "rust" / "hermes_core" / "src"
_TEST_FILES = {"tests.rs", "test_support.rs"}


def _rust_modules() -> dict[str, Path]:
    """``crate::a::b`` -> its file (``lib.rs`` is ``crate``; ``a/mod.rs`` is ``crate::a``); test-only files left out."""
    found = {}
    for path in sorted(RUST_SRC.rglob("*.rs")):
        if path.name in _TEST_FILES:
            continue
        parts = list(path.relative_to(RUST_SRC).with_suffix("").parts)
        if parts[-1] in ("mod", "lib"):
            parts.pop()
        found["::".join(["crate", *parts])] = path
    return found


def _without_tests_and_comments(text: str) -> str:
    text = re.sub(r"//[^\n]*", "", text)
    cut = re.search(r"#\[cfg\(test\)\]\s*mod\s+\w+\s*\{", text)  # inline test modules come last in a file
    return text[: cut.start()] if cut else text


def _expand(tree: str) -> list[str]:
    """``a::{b, c::{d, e}}`` -> ``a::b``, ``a::c::d``, ``a::c::e``."""
    tree = re.sub(r"\s+", "", tree)
    if "{" not in tree:
        return [tree]
    head, _, rest = tree.partition("{")
    body = rest[: rest.rfind("}")]
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(body):
        depth += ch == "{"
        depth -= ch == "}"
        if ch == "," and depth == 0:
            parts.append(body[start:i])
            start = i + 1
    parts.append(body[start:])
    return [path for part in parts if part for path in _expand(head + part)]


def rust_imports() -> dict[str, set[str]]:
    """Module -> the modules its paths name, leaving out a module's own ancestors and descendants: a parent that
    declares and re-exports its children, and a child using its parent's items, is the shape of every Rust module
    tree, not a circle between parts."""
    mods = _rust_modules()
    graph: dict[str, set[str]] = {}
    for module, path in mods.items():
        text = _without_tests_and_comments(path.read_text())
        paths = [p for tree in re.findall(r"\buse\s+([^;]+);", text) for p in _expand(tree)]
        paths += re.findall(r"(?<![\w:])((?:crate|super|self)(?:::\w+)+)", re.sub(r"\buse\s+[^;]+;", "", text))
        for used in paths:
            segments = used.split("::")
            base = module.split("::")
            while segments and segments[0] in ("super", "self"):
                if segments.pop(0) == "super":
                    base = base[:-1]
            if segments and segments[0] == "crate":
                base, segments = ["crate"], segments[1:]
            elif base == module.split("::") and used.split("::")[0] not in ("self",):
                continue  # an external crate or a local name
            target = "::".join([*base, *segments])
            while target not in mods:
                target = target.rpartition("::")[0]
            if target != module and not target.startswith(module + "::") and not module.startswith(target + "::"):
                graph.setdefault(module, set()).add(target)
    return graph


def test_rust_paths_are_read() -> None:
    graph = rust_imports()
    assert "crate::parsers::stream" in graph.get("crate::parsers::formats::hermes", set()) | {
        t for ts in graph.values() for t in ts
    }
    assert "crate::parsers::utf8" in graph["crate::parsers::stream"]
    assert _expand("a::{b, c::{d, e}}") == ["a::b", "a::c::d", "a::c::e"]


def test_no_cycle_between_rust_modules() -> None:
    found = _layers.cycles(rust_imports())
    assert not found, f"Rust modules of hermes_core using each other in a circle: {found}"


# -- tests mirror the package ----------------------------------------------------------------------
# Folders of tests/ that are not a unit of hermes_env, and why.
NOT_UNITS = {
    "benches": "the benchmark suite's smoke test (benches/ is not in the package)",
    "data": "recorded cases and fixtures the tests read",
    "e2e": "end-to-end runs across packages (real servers on 127.0.0.1)",
    "faults": "fault injection across packages (killed workers, broken servers, signals)",
    "repo": "checks of the repository itself (this file)",
    "support": "helpers the tests share (processes seen from /proc)",
}


def test_tests_mirror_the_packages() -> None:
    tests = REPO / "tests"
    loose = sorted(p.name for p in tests.glob("test_*.py"))
    assert not loose, f"test files loose at the top of tests/: {loose}; move each under the folder of what it tests"
    units = {u.removeprefix("_") for layer in _layers.LAYERS for u in layer}
    folders = {p.name for p in tests.iterdir() if p.is_dir() and not p.name.startswith((".", "__"))}
    unknown = sorted(folders - units - set(NOT_UNITS))
    assert not unknown, f"tests/ folders named for no unit of hermes_env: {unknown} (add a reason to NOT_UNITS)"
