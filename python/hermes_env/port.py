"""Port a hermes-agent environment file to hermes_env by rewriting its imports, and nothing else.

    python -m hermes_env.port UPSTREAM_ENV.py -o my_env.py

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
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import io
import re
import sys
import tokenize
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DEFAULT_PACKAGE",
    "TARGET_PACKAGE",
    "UPSTREAM_ROOTS",
    "ImportChange",
    "PortResult",
    "UnmappedImport",
    "infer_package",
    "map_module",
    "missing_names",
    "module_exists",
    "port_source",
    "resolve_module",
]

TARGET_PACKAGE = "hermes_env.hermes_agent"
# hermes-agent's own top-level modules and packages, as its environment files import them.
UPSTREAM_ROOTS = frozenset({"environments", "model_tools", "toolsets", "toolset_distributions", "tools", "atropos"})
# Where upstream's relative imports live when the file's path does not say: its atropos/envs package.
DEFAULT_PACKAGE = "atropos.envs"

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class PortError(ValueError):
    """A file that cannot be ported (not Python, or an import that cannot be resolved)."""


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
class PortResult:
    source: str
    changes: tuple[ImportChange, ...]
    unmapped: tuple[UnmappedImport, ...]


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
) -> PortResult:
    """Rewrite the upstream imports of ``source`` (see the module docstring). ``package`` is the package
    relative imports are resolved against; ``exists`` says whether a target module exists."""
    try:
        tree = ast.parse(source)
    except SyntaxError as err:
        raise PortError(f"not valid Python (line {err.lineno}: {err.msg})") from None
    positions = _Positions(source)
    edits: list[tuple[int, int, str]] = []
    changes: list[ImportChange] = []
    unmapped: list[UnmappedImport] = []

    def span(node: ast.AST) -> tuple[int, int]:
        start = positions.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]
        end = positions.offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
        return start, end

    def target_for(node: ast.stmt, absolute: str) -> str | None:
        target = map_module(absolute)
        if target is None:
            return None
        if not exists(target):
            statement = source[slice(*span(node))]
            unmapped.append(UnmappedImport(node.lineno, _one_line(statement), absolute, f"no module {target}"))
            return None
        return target

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
    return PortResult(out, tuple(changes), tuple(unmapped))


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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hermes_env.port",
        description="Rewrite the imports of a hermes-agent environment file to hermes_env's hermes-agent "
        "compatibility package (hermes_env.hermes_agent); every other byte stays as written.",
    )
    parser.add_argument("file", type=Path, help="the upstream environment file (.py)")
    parser.add_argument("-o", "--output", type=Path, help="where to write the ported file (default: stdout)")
    parser.add_argument(
        "--package",
        help="the upstream package the file belongs to, for its relative imports (default: inferred from a path "
        f"containing atropos/envs/ or environments/, else {DEFAULT_PACKAGE})",
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
    if package is None:
        package = infer_package(file.resolve()) or DEFAULT_PACKAGE
    try:
        source, encoding = _read(file)
        result = port_source(source, package=package)
    except OSError as err:
        print(f"error: cannot read {file}: {err.strerror or err}", file=sys.stderr)
        return 2
    except PortError as err:
        print(f"error: {file}: {err}", file=sys.stderr)
        return 2

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
    for miss in result.unmapped:
        print(
            f"{file}:{miss.line}: cannot map {miss.statement!r} ({miss.module}): {miss.reason}; left as written",
            file=sys.stderr,
        )
    data = result.source.encode(encoding)
    if args.output is None:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:
        try:
            args.output.parent.mkdir(parents=True, exist_ok=True)
            args.output.write_bytes(data)
        except OSError as err:
            print(f"error: cannot write {args.output}: {err.strerror or err}", file=sys.stderr)
            return 2
    where = args.output or "stdout"
    print(
        f"ported {file} -> {where}: {len(result.changes)} import(s) rewritten, {len(result.unmapped)} unmapped "
        f"(relative imports resolved against package {package})",
        file=sys.stderr,
    )
    if result.unmapped and not args.allow_unmapped:
        print(
            f"error: {len(result.unmapped)} upstream import(s) have no counterpart in {TARGET_PACKAGE}"
            " (named above); the file was written with them as written; pass --allow-unmapped to accept that",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
