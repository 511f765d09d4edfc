"""The package's layers, bottom first, and a reader of its import graph (for the layering test and the drawing).

A *unit* is a top-level subpackage or module of ``hermes_env`` (``agent``, ``errors``, ...); the root
package's ``__init__`` is the unit ``hermes_env``. A unit may import units of lower layers only; units of
one layer do not import each other. ARCHITECTURE.md draws the same order, and
``tests/repo/test_import_graph.py`` holds the code to it. Read by nothing at run time.

An import is any ``import``/``from ... import`` statement, at module level or inside a function (a
function-level import still makes the module depend on the other one), plus the module paths that
``lazy_attributes`` and ``importlib.import_module`` are given as string literals, plus, for a module whose
``__getattr__`` is built by ``old_names``, the modules its old names now live in (``_renamed.OLD_NAMES``, read
as a literal). Imports under ``if TYPE_CHECKING:`` are left out: they never run, and only type checkers follow them.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "hermes_env"

#: Bottom first. One line of ARCHITECTURE.md's layer map per layer, in this order.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("_core",),
    ("_lazy", "_layers", "_renamed", "errors", "message_fields", "sync_bridge", "timeouts"),
    ("resources", "trajectory", "envs", "sandbox", "models"),
    ("parsers",),
    ("isolation", "containers"),
    ("slot_pool",),
    ("backends",),
    ("tools",),
    ("managed", "distill", "judges"),
    ("agent",),
    ("tool_context", "html_view"),
    ("env",),
    ("gguf", "agent_env"),
    ("testing",),
    ("environments",),
    ("checks", "port", "hermes_agent"),
    ("commands",),
    ("hermes_env", "__main__"),
)

#: Imports allowed to run against the order: (importing module, imported module) -> why. At most 3; each
#: is also explained by a comment where the import stands.
ALLOWED_BACK_EDGES: dict[tuple[str, str], str] = {}

# Folders of data (task repositories copied into sandboxes), not modules of the package.
_NOT_MODULES = ("environments/swe_lite/repos",)


@dataclass(frozen=True, order=True)
class Import:
    """``importer`` (a module) imports ``imported`` (a module of the package) at ``line``."""

    importer: str
    imported: str
    line: int


def package_dir() -> Path:
    return Path(__file__).resolve().parent


def modules(root: Path | None = None) -> dict[str, Path]:
    """Every module of the package (dotted name -> file), the compiled ``_core`` as its ``.pyi``."""
    root = root or package_dir()
    found: dict[str, Path] = {}
    for path in sorted([*root.rglob("*.py"), *root.glob("*.pyi")]):
        rel = path.relative_to(root)
        if any(rel.as_posix().startswith(skip) for skip in _NOT_MODULES) or "__pycache__" in rel.parts:
            continue
        parts = [PACKAGE, *rel.with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found.setdefault(".".join(parts), path)
    return found


def unit_of(module: str) -> str:
    """The unit a module belongs to: ``hermes_env.agent.loop`` -> ``agent``; the root package -> ``hermes_env``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else PACKAGE


def layer_of(unit: str) -> int:
    """The index of ``unit``'s layer in :data:`LAYERS` (0 is the bottom); ``KeyError`` if it is in none."""
    for index, layer in enumerate(LAYERS):
        if unit in layer:
            return index
    raise KeyError(unit)


def _type_checking_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def old_name_homes(root: Path | None = None) -> dict[str, set[str]]:
    """Module -> the modules its old names now live in, from ``_renamed.OLD_NAMES`` (read, not imported)."""
    path = (root or package_dir()) / "_renamed.py"
    homes: dict[str, set[str]] = {}
    if not path.is_file():
        return homes
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.AnnAssign) and ast.unparse(node.target) == "OLD_NAMES" and node.value is not None:
            for old, new in ast.literal_eval(node.value).items():
                if ":" in old:
                    homes.setdefault(old.partition(":")[0], set()).add(new.partition(":")[0])
    return homes


def _named(node: ast.AST, module: str, is_package: bool, homes: dict[str, set[str]]) -> list[str]:
    """The dotted names one statement or call imports (``homes``: :func:`old_name_homes`)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            package = module.split(".") if is_package else module.split(".")[:-1]
            anchor = ".".join(package[: len(package) - (node.level - 1)])
            base = f"{anchor}.{base}" if base else anchor
        # ``from pkg import sub`` imports the submodule when there is one, else a name of ``pkg``
        return [f"{base}.{alias.name}" for alias in node.names] + [base]
    if isinstance(node, ast.Call):
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        if name in ("lazy_attributes", "import_module"):
            return [
                const.value
                for const in ast.walk(node)
                if isinstance(const, ast.Constant) and isinstance(const.value, str) and const.value.startswith(PACKAGE)
            ]
        if name == "old_names":
            return sorted(homes.get(module, ()))
    return []


def imports(root: Path | None = None) -> list[Import]:
    """Every import of one module of the package by another (see the module docstring for what counts)."""
    found = modules(root)
    homes = old_name_homes(root)
    edges: set[Import] = set()
    for module, path in found.items():
        if path.suffix == ".pyi":
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        skipped = _type_checking_lines(tree)
        is_package = path.name == "__init__.py"
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom | ast.Call) or node.lineno in skipped:
                continue
            names = _named(node, module, is_package, homes)
            if isinstance(node, ast.ImportFrom):
                # a submodule named in ``from pkg import sub`` replaces the package itself as the target
                submodules = [n for n in names[:-1] if n in found]
                names = submodules + ([names[-1]] if len(submodules) < len(names) - 1 else [])
            for name in names:
                target = name
                while target and target not in found:
                    target = target.rpartition(".")[0]
                if target and target != module and target.split(".")[0] == PACKAGE:
                    edges.add(Import(module, target, node.lineno))
    return sorted(edges)


def unit_graph(edges: list[Import]) -> dict[str, set[str]]:
    """Unit -> the other units it imports."""
    graph: dict[str, set[str]] = {}
    for edge in edges:
        a, b = unit_of(edge.importer), unit_of(edge.imported)
        if a != b:
            graph.setdefault(a, set()).add(b)
    return graph


def against_order(edges: list[Import]) -> list[Import]:
    """Imports of a unit of the same or a higher layer than the importer's (units missing from LAYERS skipped)."""
    wrong = []
    for edge in edges:
        a, b = unit_of(edge.importer), unit_of(edge.imported)
        try:
            if a != b and layer_of(b) >= layer_of(a):
                wrong.append(edge)
        except KeyError:
            continue
    return wrong


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted: every import cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)
