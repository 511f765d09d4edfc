"""Port hermes-agent environment files to hermes_env by rewriting their imports, and nothing else.

    python -m hermes_env.port UPSTREAM_ENV.py -o my_env.py
    python -m hermes_env.port HERMES_AGENT_DIR -o OUTDIR      # a whole tree, layout kept

Every import of one of hermes-agent's own modules (``environments.*``, ``model_tools``, ``toolsets``,
``toolset_distributions``, ``tools.*``, ``atropos.*``) becomes an import of the same path under
``hermes_env.hermes_agent``, the hermes-agent compatibility package. Relative imports (``from ..agent
import X`` in upstream's ``atropos/envs``) are resolved against the file's package first and written as
absolute imports. Third-party imports (atroposlib, pydantic, datasets, ...) are left alone, and so is
every byte outside the rewritten import statements: names, parentheses and comments of a ``from ...
import (...)`` list stay as written, only the module path changes.

Each change is printed to stderr (``FILE:LINE: old -> new``). An upstream import whose target does not
exist in ``hermes_env.hermes_agent`` is left as written and named; the exit status is then 1 unless
``--allow-unmapped`` is given (the file is written either way). Porting a ported file changes nothing.

Upstream environment files also import each other (``tblite_env.py`` imports ``environments.benchmarks.
terminalbench_2.terminalbench2_env``) with their repository root put on ``sys.path`` by themselves. An import
of an environment file (any upstream module that is not one of hermes-agent's framework modules, see
:func:`is_framework_module`) that is a file of the tree being ported stays imported as written, so the ported
file imports its ported sibling, even where ``hermes_env.hermes_agent`` has a module of that name (a user's own
edited Terminal-Bench 2 wins in a tree port); with no such sibling (a single file ported) it goes to the front's
module, where there is one. Framework modules always go to the front. Directory mode ports every ``.py`` file
of a tree (other files are copied unchanged, layout kept); for a single file whose upstream sibling is not
ported and has no front module, the message says to port the tree.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import io
import os
import re
import shutil
import sys
import tokenize
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from hermes_env.errors import PortError

__all__ = [
    "DEFAULT_PACKAGE",
    "TARGET_PACKAGE",
    "UPSTREAM_ROOTS",
    "ImportChange",
    "PortResult",
    "KeptImport",
    "UnmappedImport",
    "infer_package",
    "is_framework_module",
    "module_file",
    "port_tree",
    "upstream_root",
    "map_module",
    "missing_names",
    "module_exists",
    "port_source",
    "resolve_module",
    "tree_root",
]

TARGET_PACKAGE = "hermes_env.hermes_agent"
# hermes-agent's own top-level modules and packages, as its environment files import them.
UPSTREAM_ROOTS = frozenset({"environments", "model_tools", "toolsets", "toolset_distributions", "tools", "atropos"})
# Where upstream's relative imports live when the file's path does not say: its atropos/envs package.
DEFAULT_PACKAGE = "atropos.envs"

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# hermes-agent's framework: the modules environment files build on (as opposed to environment files themselves).
_FRAMEWORK_MODULES = frozenset({
    "model_tools", "toolsets", "toolset_distributions", "tools", "environments", "environments.agent_loop",
    "environments.hermes_base_env", "environments.tool_context", "environments.patches",
    "environments.tool_call_parsers", "atropos", "atropos.envs", "atropos.envs.agent_env",
})  # fmt: skip
_FRAMEWORK_PACKAGES = ("tools.", "environments.tool_call_parsers.", "atropos.")


def resolve_module(module: str | None, level: int, package: str) -> str:
    """The absolute module a ``from`` import names: ``(module, level)`` as in ``ast.ImportFrom``, resolved
    against ``package`` (the package the importing file belongs to) as Python's import system does."""
    if level == 0:
        if not module:
            raise PortError("an absolute import needs a module name")
        return module
    parts = package.split(".") if package else []
    if level > len(parts):
        dots = "." * level
        raise PortError(f"'from {dots}{module or ''} import' goes above the top of package {package!r}")
    base = parts[: len(parts) - level + 1]
    return ".".join([*base, module] if module else base)


def map_module(absolute: str) -> str | None:
    """The ``hermes_env.hermes_agent`` module that stands for upstream module ``absolute``, or None when
    ``absolute`` is not one of hermes-agent's own modules (third-party, standard library, or already
    ported). Pure: it does not look at what exists."""
    root = absolute.split(".", 1)[0]
    if root not in UPSTREAM_ROOTS:
        return None
    return f"{TARGET_PACKAGE}.{absolute}"


def is_framework_module(absolute: str) -> bool:
    """Whether upstream module ``absolute`` is part of hermes-agent's framework (``environments.agent_loop``,
    ``hermes_base_env``, ``tool_context``, ``tools.*``, ``model_tools``, ``atropos.*`` but its environment files
    in ``atropos.envs``, ...), which the front always stands for, rather than an environment file."""
    if absolute in _FRAMEWORK_MODULES:
        return True
    if absolute.startswith("atropos.envs."):
        return False
    return absolute.startswith(_FRAMEWORK_PACKAGES)


def infer_package(path: Path | str) -> str | None:
    """The upstream package a file belongs to, from its path: ``.../atropos/envs/x.py`` -> ``atropos.envs``,
    ``.../environments/benchmarks/tblite/tblite_env.py`` -> ``environments.benchmarks.tblite``; None when
    the path names neither."""
    folders = Path(path).parent.parts
    for index in range(len(folders) - 1, -1, -1):
        pair = folders[index : index + 2]
        if tuple(pair) == ("atropos", "envs") or folders[index] == "environments":
            package = folders[index:]
            if all(_IDENTIFIER.match(part) for part in package):
                return ".".join(package)
            return None
    return None


def upstream_root(path: Path | str) -> Path | None:
    """The folder holding the ``environments/`` or ``atropos/`` package a file belongs to (upstream's repository
    root, which upstream files put on ``sys.path``), or None when the path names neither."""
    path = Path(path)
    package = infer_package(path)
    if package is None:
        return None
    return path.parents[len(package.split("."))]


def module_file(root: Path, module: str) -> Path | None:
    """The file (``a/b.py``) or package folder (``a/b/``) of ``module`` under ``root``, if there is one."""
    parts = module.split(".")
    if not all(_IDENTIFIER.match(part) for part in parts):
        return None
    base = root.joinpath(*parts)
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    if base.is_dir():
        return base
    return None


def module_exists(name: str) -> bool:
    """Whether ``name`` can be imported (``importlib.util.find_spec``; parent packages get imported)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


@dataclass(frozen=True)
class ImportChange:
    line: int
    old: str
    new: str
    module: str = ""  # for ``from M import names``: the ported M and the names taken from it
    names: tuple[str, ...] = ()


@dataclass(frozen=True)
class UnmappedImport:
    line: int
    statement: str
    module: str  # the upstream module it names (absolute)
    reason: str


@dataclass(frozen=True)
class KeptImport:
    """An upstream import left as written because its module is a file of the tree being ported."""

    line: int
    statement: str
    module: str  # the upstream module it names (absolute)
    path: Path  # that module's file (or package folder) in the tree


@dataclass(frozen=True)
class PortResult:
    source: str
    changes: tuple[ImportChange, ...]
    unmapped: tuple[UnmappedImport, ...]
    kept: tuple[KeptImport, ...] = ()


class _Positions:
    """Character offsets into the source from ``ast`` positions (line numbers and UTF-8 byte columns)."""

    def __init__(self, source: str) -> None:
        # newline='' splits on \n, \r\n and \r, as Python's tokenizer does, and keeps the endings.
        self.lines = io.StringIO(source, newline="").readlines()
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line))

    def offset(self, lineno: int, byte_col: int) -> int:
        if lineno > len(self.lines):  # the position just past a last line without a newline
            return self.starts[-1] + byte_col
        line = self.lines[lineno - 1]
        return self.starts[lineno - 1] + len(line.encode("utf-8")[:byte_col].decode("utf-8"))


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _module_span(statement: str) -> tuple[int, int]:
    """Offsets, within a ``from ... import ...`` statement, of the module part (dots and dotted name)."""
    tokens = tokenize.generate_tokens(io.StringIO(statement, newline="").readline)
    start = end = None
    lines = io.StringIO(statement, newline="").readlines()
    line_starts = [0]
    for line in lines:
        line_starts.append(line_starts[-1] + len(line))
    for token in tokens:
        if token.type == tokenize.NAME and token.string == "from" and start is None and end is None:
            continue
        if token.type == tokenize.NAME and token.string == "import":
            break
        if token.type in (tokenize.NL, tokenize.COMMENT):
            continue
        (srow, scol), (erow, ecol) = token.start, token.end
        if start is None:
            start = line_starts[srow - 1] + scol
        end = line_starts[erow - 1] + ecol
    if start is None or end is None:
        raise PortError(f"no module name in {statement!r}")
    return start, end


def port_source(
    source: str,
    *,
    package: str = DEFAULT_PACKAGE,
    exists: Callable[[str], bool] = module_exists,
    siblings: Callable[[str], Path | None] | None = None,
    upstream_file: Callable[[str], Path | None] | None = None,
) -> PortResult:
    """Rewrite the upstream imports of ``source`` (see the module docstring). ``package`` is the package
    relative imports are resolved against; ``exists`` says whether a target module exists. An upstream module
    for which ``siblings`` gives a path (a file of the tree being ported) is kept as written when it is an
    environment file, or a framework module without a target; one without a target for which only
    ``upstream_file`` gives a path (upstream's file, not being ported) is unmapped with a reason saying to port
    the tree."""
    try:
        tree = ast.parse(source)
    except SyntaxError as err:
        raise PortError(f"not valid Python (line {err.lineno}: {err.msg})") from None
    positions = _Positions(source)
    edits: list[tuple[int, int, str]] = []
    changes: list[ImportChange] = []
    unmapped: list[UnmappedImport] = []
    siblings_kept: list[KeptImport] = []

    def span(node: ast.AST) -> tuple[int, int]:
        start = positions.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]
        end = positions.offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
        return start, end

    def target_for(node: ast.stmt, absolute: str) -> str | None:
        target = map_module(absolute)
        if target is None:
            return None
        local = siblings(absolute) if siblings is not None else None
        # The tree's own environment file wins over the front's; the front stands for framework modules always.
        if exists(target) and (local is None or is_framework_module(absolute)):
            return target
        statement = _one_line(source[slice(*span(node))])
        if local is not None:
            siblings_kept.append(KeptImport(node.lineno, statement, absolute, local))
            return None
        reason = f"no module {target}"
        theirs = upstream_file(absolute) if upstream_file is not None else None
        if theirs is not None:
            root = theirs.parents[absolute.count(".")]  # the folder holding the module's top package
            reason += (
                f"; {absolute} is upstream's own file {theirs}, not a framework module: port the tree that holds it "
                f"(python -m hermes_env.port {root} -o OUTDIR) and the ported file imports the ported sibling as "
                "written"
            )
        unmapped.append(UnmappedImport(node.lineno, statement, absolute, reason))
        return None

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            start, end = span(node)
            statement = source[start:end]
            try:
                absolute = resolve_module(node.module, node.level, package)
            except PortError as err:
                unmapped.append(
                    UnmappedImport(node.lineno, _one_line(statement), "." * node.level + (node.module or ""), str(err))
                )
                continue
            if node.level and map_module(absolute) is None:
                continue  # a relative import within the caller's own (non-upstream) package
            target = target_for(node, absolute)
            if target is None:
                continue
            mod_start, mod_end = _module_span(statement)
            edits.append((start + mod_start, start + mod_end, target))
            new = statement[:mod_start] + target + statement[mod_end:]
            names = tuple(alias.name for alias in node.names if alias.name != "*")
            changes.append(ImportChange(node.lineno, _one_line(statement), _one_line(new), target, names))
        elif isinstance(node, ast.Import):
            start, end = span(node)
            statement = source[start:end]
            parts: list[str] = []  # the statements that replace this one, joined with "; "
            kept: list[str] = []  # consecutive aliases left as written
            changed = False
            for alias in node.names:
                target = target_for(node, alias.name)
                if target is None:
                    kept.append(source[slice(*span(alias))])
                    continue
                changed = True
                if kept:
                    parts.append("import " + ", ".join(kept))
                    kept = []
                if alias.asname:
                    parts.append(f"import {target} as {alias.asname}")
                elif "." not in alias.name:
                    parts.append(f"from {TARGET_PACKAGE} import {alias.name}")
                else:
                    # ``import a.b`` binds ``a`` and loads ``a.b``: bind the ported ``a`` and load the ported ``a.b``.
                    root = alias.name.split(".", 1)[0]
                    parts.append(f"from {TARGET_PACKAGE} import {root}; import {target}")
            if not changed:
                continue
            if kept:
                parts.append("import " + ", ".join(kept))
            new = "; ".join(parts)
            edits.append((start, end, new))
            changes.append(ImportChange(node.lineno, _one_line(statement), new))

    out = source
    for start, end, text in sorted(edits, reverse=True):
        out = out[:start] + text + out[end:]
    changes.sort(key=lambda c: c.line)
    unmapped.sort(key=lambda u: u.line)
    siblings_kept.sort(key=lambda k: k.line)
    return PortResult(out, tuple(changes), tuple(unmapped), tuple(siblings_kept))


def missing_names(module: str, names: Sequence[str]) -> list[str]:
    """The names of ``from module import names`` that ``module`` lacks (neither an attribute nor a submodule).
    Imports ``module``; an import that fails is reported as the one problem."""
    try:
        imported = importlib.import_module(module)
    except (Exception, SystemExit) as err:  # noqa: BLE001 - whatever a broken module raises is reported, not raised
        return [f"(importing {module} failed: {type(err).__name__}: {err})"]
    return [n for n in names if not hasattr(imported, n) and not module_exists(f"{module}.{n}")]


def _read(path: Path) -> tuple[str, str]:
    """The file's text and encoding (from its coding cookie or BOM), line endings untouched."""
    data = path.read_bytes()
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding), encoding
    except (SyntaxError, UnicodeDecodeError, LookupError) as err:
        raise PortError(f"cannot decode: {err}") from None


def tree_root(directory: Path) -> Path:
    """Where the modules of a tree being ported are looked up: the upstream root holding it (``directory``
    itself when it holds ``environments/`` or ``atropos/``, else the nearest folder above whose ``environments/``
    or ``atropos/`` contains it), or ``directory`` for a tree of another layout."""
    for candidate in (directory, *directory.parents):
        for top in ("environments", "atropos"):
            if (candidate / top).is_dir() and (directory == candidate or _within(directory, candidate / top)):
                return candidate
    return directory


def _package_in(root: Path, file: Path) -> str:
    """The package of ``file`` from its folder under ``root`` (``""`` at the top), else the default."""
    parts = file.parent.relative_to(root).parts
    if all(_IDENTIFIER.match(part) for part in parts):
        return ".".join(parts)
    return DEFAULT_PACKAGE


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


@dataclass
class _Outcome:
    changes: int = 0
    unmapped: int = 0
    kept: int = 0
    failed: int = 0
    replaced_unmapped: int = 0  # unmapped imports in files the front replaces (not counted as unmapped)


def _port_one(
    file: Path,
    output: Path | None,
    package: str,
    outcome: _Outcome,
    *,
    siblings: Callable[[str], Path | None] | None,
    upstream_file: Callable[[str], Path | None] | None,
    replaced_by: str | None = None,
) -> None:
    """Port ``file`` to ``output`` (stdout when None), printing what changed to stderr; counts into ``outcome``.
    A file that cannot be read or parsed is counted as failed (and named); raises OSError only on write.
    ``replaced_by``: the front module that stands for this file (nothing imports the ported file), so its
    unmapped imports are noted, not counted."""
    try:
        source, encoding = _read(file)
        result = port_source(source, package=package, siblings=siblings, upstream_file=upstream_file)
    except OSError as err:
        print(f"error: cannot read {file}: {err.strerror or err}", file=sys.stderr)
        outcome.failed += 1
        return
    except PortError as err:
        print(f"error: {file}: {err}", file=sys.stderr)
        outcome.failed += 1
        return
    for change in result.changes:
        print(f"{file}:{change.line}: {change.old} -> {change.new}", file=sys.stderr)
    for change in result.changes:
        lacking = missing_names(change.module, change.names) if change.names else []
        if lacking:
            print(
                f"{file}:{change.line}: warning: {change.module} lacks {', '.join(lacking)}; "
                "the ported file fails where it imports them",
                file=sys.stderr,
            )
    for keep in result.kept:
        print(
            f"{file}:{keep.line}: kept {keep.statement!r}: {keep.module} is a file of the ported tree ({keep.path})"
            + ("" if is_framework_module(keep.module) else ", an environment file, not a framework module")
            + ", so the ported file imports the ported sibling",
            file=sys.stderr,
        )
    for miss in result.unmapped:
        what = f"{file}:{miss.line}: cannot map {miss.statement!r} ({miss.module}): {miss.reason}; left as written"
        if replaced_by is not None:
            what = f"note: {what} (harmless: imports of this file go to {replaced_by})"
        print(what, file=sys.stderr)
    data = result.source.encode(encoding)
    if output is None:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_bytes(data)
    outcome.changes += len(result.changes)
    if replaced_by is None:
        outcome.unmapped += len(result.unmapped)
    else:
        outcome.replaced_unmapped += len(result.unmapped)
    outcome.kept += len(result.kept)


_SKIPPED_FOLDERS = frozenset({".git", "__pycache__"})


def port_tree(source: Path, dest: Path) -> tuple[int, _Outcome]:
    """Port every ``.py`` file under ``source`` to the same place under ``dest`` and copy every other file
    (symbolic links stay links; ``.git`` and ``__pycache__`` are skipped). Returns the number of Python files
    and what happened to them. ``dest`` must not be ``source`` or inside it."""
    source, dest = source.resolve(), dest.resolve()
    if _within(dest, source):
        raise PortError(f"the output folder {dest} is inside the tree being ported; name one outside {source}")
    root = tree_root(source)

    def siblings(module: str) -> Path | None:
        found = module_file(root, module)
        return found if found is not None and _within(found, source) else None

    def upstream_file(module: str) -> Path | None:
        return module_file(root, module)

    outcome = _Outcome()
    files = 0
    for folder, folders, names in os.walk(source):
        here = Path(folder)
        folders[:] = sorted(f for f in folders if f not in _SKIPPED_FOLDERS)
        target = dest / here.relative_to(source)
        target.mkdir(parents=True, exist_ok=True)
        for link in [f for f in folders if (here / f).is_symlink()]:
            _copy_link(here / link, target / link)
        for name in sorted(names):
            path = here / name
            if path.is_symlink():
                _copy_link(path, target / name)
            elif name.endswith(".py"):
                files += 1
                before = outcome.failed
                package = _package_in(root, path)
                _port_one(
                    path,
                    target / name,
                    package,
                    outcome,
                    siblings=siblings,
                    upstream_file=upstream_file,
                    replaced_by=_front_counterpart(root, path),
                )
                if outcome.failed > before:
                    shutil.copy2(path, target / name)  # named above; the output tree still holds it, as written
            else:
                shutil.copy2(path, target / name)
    return files, outcome


def _front_counterpart(root: Path, file: Path) -> str | None:
    """The front module standing for upstream module file ``file`` (``environments/agent_loop.py`` under
    ``root``), or None. A package's ``__init__.py`` never counts: the ported tree's own package is imported on
    the way to its ported siblings."""
    parts = [*file.parent.relative_to(root).parts, file.name.removesuffix(".py")]
    if file.name == "__init__.py" or not all(_IDENTIFIER.match(part) for part in parts):
        return None
    module = ".".join(parts)
    if not is_framework_module(module):
        return None  # an environment file: the ported tree's copy is the one its siblings import
    target = map_module(module)
    return target if target is not None and module_exists(target) else None


def _copy_link(link: Path, target: Path) -> None:
    if target.is_symlink() or target.is_file():
        target.unlink()
    os.symlink(os.readlink(link), target)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hermes_env.port",
        description="Rewrite the imports of hermes-agent environment files to hermes_env's hermes-agent "
        "compatibility package (hermes_env.hermes_agent); every other byte stays as written.",
    )
    parser.add_argument(
        "file",
        type=Path,
        help="the upstream environment file (.py), or a folder: every .py file under it is ported and every other "
        "file copied, layout kept (for a hermes-agent checkout, name the folder holding environments/ or atropos/)",
    )
    parser.add_argument(
        "-o", "--output", type=Path, help="where to write the ported file (default: stdout); for a folder, required"
    )
    parser.add_argument(
        "--package",
        help="the upstream package the file belongs to, for its relative imports (default: inferred from a path "
        f"containing atropos/envs/ or environments/, else {DEFAULT_PACKAGE}); not for a folder",
    )
    parser.add_argument(
        "--allow-unmapped",
        action="store_true",
        help="exit 0 even when some upstream imports have no hermes_env counterpart (they are left as written)",
    )
    args = parser.parse_args(argv)

    file: Path = args.file
    package = args.package
    if package is not None and not all(_IDENTIFIER.match(p) for p in package.split(".")):
        parser.error(f"--package {package!r} is not a dotted module path (e.g. atropos.envs)")
    outcome = _Outcome()
    if file.is_dir():
        if args.output is None:
            parser.error(f"{file} is a folder: name the output folder with -o OUTDIR")
        if package is not None:
            parser.error("--package is for a single file; in a folder each file's package is its path")
        try:
            files, outcome = port_tree(file, args.output)
        except PortError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
        except OSError as err:
            print(f"error: {err.filename or args.output}: {err.strerror or err}", file=sys.stderr)
            return 2
        summary = f"ported {file} -> {args.output}: {files} Python file(s),"
        relative = f"(relative imports resolved against each file's package under {tree_root(file.resolve())})"
    else:
        resolved = file.resolve()
        if package is None:
            package = infer_package(resolved) or DEFAULT_PACKAGE
        root = upstream_root(resolved)

        def upstream_file(module: str) -> Path | None:
            return module_file(root, module) if root is not None else None

        try:
            _port_one(file, args.output, package, outcome, siblings=None, upstream_file=upstream_file)
        except OSError as err:
            print(f"error: cannot write {args.output}: {err.strerror or err}", file=sys.stderr)
            return 2
        if outcome.failed:
            return 2
        summary = f"ported {file} -> {args.output or 'stdout'}:"
        relative = f"(relative imports resolved against package {package})"
    kept = f", {outcome.kept} kept as sibling import(s)" if outcome.kept else ""
    if outcome.replaced_unmapped:
        kept += f", {outcome.replaced_unmapped} unmapped in files {TARGET_PACKAGE} replaces (not counted)"
    print(
        f"{summary} {outcome.changes} import(s) rewritten, {outcome.unmapped} unmapped{kept} {relative}",
        file=sys.stderr,
    )
    status = 0
    if outcome.failed:
        print(f"error: {outcome.failed} file(s) could not be ported (named above); copied as written", file=sys.stderr)
        status = 1
    if outcome.unmapped and not args.allow_unmapped:
        print(
            f"error: {outcome.unmapped} upstream import(s) have no counterpart in {TARGET_PACKAGE}"
            " (named above); the file was written with them as written; pass --allow-unmapped to accept that",
            file=sys.stderr,
        )
        status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
