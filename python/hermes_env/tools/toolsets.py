"""Toolsets: named groups of tools a rollout may be given.

``TOOLSETS`` lists the built-in groups; tools registered later under a new ``toolset`` name
form new groups automatically (``REGISTRY.toolsets()`` is the live view).
"""

from __future__ import annotations

from collections.abc import Sequence

from hermes_env.tools import builtin as _builtin  # noqa: F401 - registers the built-in tools
from hermes_env.tools.registry import REGISTRY, ToolRegistry

TOOLSETS: dict[str, list[str]] = {
    "terminal": ["terminal"],
    "file": ["read_file", "write_file", "patch", "search_files"],
    "todo": ["todo"],
}


def available_toolsets(registry: ToolRegistry = REGISTRY) -> list[str]:
    """Toolsets with at least one tool whose availability check passes here."""
    return [name for name in registry.toolsets() if any(t.is_available() for t in registry.tools_for_toolsets([name]))]


def resolve_toolsets(
    enabled: Sequence[str] | None,
    disabled: Sequence[str] | None = None,
    registry: ToolRegistry = REGISTRY,
) -> list[str]:
    """The toolsets a rollout gets: ``enabled`` (None = every available one) minus ``disabled``.

    Unknown names in either list raise ValueError naming them and listing the valid toolsets.
    Order follows the registry (stable), duplicates are dropped.
    """
    valid = registry.toolsets()
    for label, names in (("enabled_toolsets", enabled), ("disabled_toolsets", disabled)):
        if names is None:
            continue
        if isinstance(names, str):
            raise ValueError(f"{label} must be a list of toolset names, not the string {names!r}")
        unknown = [n for n in names if n not in valid]
        if unknown:
            raise ValueError(
                f"unknown toolset(s) in {label}: {', '.join(map(repr, unknown))}; valid toolsets: {', '.join(valid)}"
            )
    chosen = available_toolsets(registry) if enabled is None else [n for n in valid if n in set(enabled)]
    drop = set(disabled or ())
    return [n for n in chosen if n not in drop]
