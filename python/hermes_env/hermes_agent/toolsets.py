"""hermes-agent's ``toolsets`` module: the toolset table and its functions, from :mod:`hermes_env.tools.toolsets`."""

from __future__ import annotations

from typing import Any

from hermes_env.tools.toolsets import (
    TOOLSETS,
    create_custom_toolset,
    get_all_toolsets,
    get_toolset,
    get_toolset_names,
    resolve_multiple_toolsets,
    resolve_toolset,
    validate_toolset,
)


def get_toolset_info(name: str) -> dict[str, Any] | None:
    """Upstream's summary of a toolset: its own tools, includes and resolved tools; None for an unknown one."""
    toolset = get_toolset(name)
    if toolset is None:
        return None
    resolved = resolve_toolset(name)
    return {
        "name": name,
        "description": toolset["description"],
        "direct_tools": toolset["tools"],
        "includes": toolset["includes"],
        "resolved_tools": resolved,
        "tool_count": len(resolved),
        "is_composite": bool(toolset["includes"]),
    }


__all__ = [
    "TOOLSETS",
    "create_custom_toolset",
    "get_all_toolsets",
    "get_toolset",
    "get_toolset_info",
    "get_toolset_names",
    "resolve_multiple_toolsets",
    "resolve_toolset",
    "validate_toolset",
]
