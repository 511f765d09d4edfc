"""hermes-agent's ``model_tools`` module: tool schemas by toolset, and calling a tool by name for a task id.

``get_tool_definitions`` follows upstream's rules: ``enabled_toolsets`` given: their tools (unknown names
skipped with a warning); otherwise every toolset's tools minus ``disabled_toolsets``; then tools that cannot
run here (web, browser, vision, ... without a tool server) are left out with one warning saying why, as
upstream's requirement checks leave them out. Schemas come sorted by name.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from typing import Any

from hermes_env.hermes_agent.tools.terminal_tool import (
    cleanup_all_environments,
    cleanup_vm,
    clear_task_env_overrides,
    register_task_env_overrides,
    task_context,
)
from hermes_env.tools import REGISTRY
from hermes_env.tools.toolsets import (
    describe_missing,
    get_all_toolsets,
    missing_tools,
    resolve_toolset,
    validate_toolset,
)

logger = logging.getLogger(__name__)

_warned: set[tuple[str, ...]] = set()
_last_resolved_tool_names: list[str] = []


def tool_names_for(enabled_toolsets: Sequence[str] | None, disabled_toolsets: Sequence[str] | None) -> set[str]:
    """The tool names upstream's selection rules give, before requirement checks."""
    names: set[str] = set()
    if enabled_toolsets:
        for toolset in enabled_toolsets:
            if validate_toolset(toolset):
                names.update(resolve_toolset(toolset))
            else:
                valid = ", ".join(get_all_toolsets())
                logger.warning("unknown toolset %r left out (valid toolsets: %s)", toolset, valid)
        return names
    for toolset in get_all_toolsets():
        names.update(resolve_toolset(toolset))
    for toolset in disabled_toolsets or ():
        if validate_toolset(toolset):
            names.difference_update(resolve_toolset(toolset))
        else:
            logger.warning("unknown toolset %r in disabled_toolsets ignored", toolset)
    return names


def available_tool_names(names: set[str]) -> list[str]:
    """``names`` without the tools that cannot run here, warning once about those left out."""
    missing = missing_tools(names)
    key = tuple(sorted(missing))
    if missing and key not in _warned:
        _warned.add(key)
        logger.warning("tools left out, they cannot run here: %s", describe_missing(missing))
    return sorted(name for name in names if name not in missing)


def get_tool_definitions(
    enabled_toolsets: Sequence[str] | None = None,
    disabled_toolsets: Sequence[str] | None = None,
    quiet_mode: bool = False,
) -> list[dict[str, Any]]:
    """OpenAI tool schemas for the selected toolsets (see the module doc)."""
    global _last_resolved_tool_names
    names = available_tool_names(tool_names_for(enabled_toolsets, disabled_toolsets))
    _last_resolved_tool_names = names
    return [REGISTRY.get(name).schema for name in names]


def handle_function_call(
    function_name: str,
    function_args: dict[str, Any],
    task_id: str | None = None,
    user_task: str | None = None,
) -> str:
    """Run a tool by name in the task's sandbox; its JSON result (``{"error": ...}`` when it failed)."""
    try:
        ctx = task_context(task_id or "default")
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return str(ctx.call_tool(function_name, function_args))
        # Called from a running loop (synchronous code inside a coroutine): run it on upstream's tool executor.
        from hermes_env.hermes_agent.environments.agent_loop import tool_executor

        return tool_executor().submit(lambda: str(ctx.call_tool(function_name, function_args))).result()
    except Exception as err:  # noqa: BLE001 - upstream answers every failure as a JSON error
        logger.error("Error executing %s: %s", function_name, err)
        return json.dumps({"error": f"Error executing {function_name}: {err}"}, ensure_ascii=False)


def get_all_tool_names() -> list[str]:
    return REGISTRY.names()


def get_toolset_for_tool(tool_name: str) -> str | None:
    tool = REGISTRY.find(tool_name)
    return tool.toolset if tool is not None else None


def check_toolset_requirements() -> dict[str, bool]:
    """``{toolset: whether every tool of it can run here}``."""
    return {name: not missing_tools(resolve_toolset(name)) for name in get_all_toolsets()}


def get_available_toolsets() -> dict[str, dict[str, Any]]:
    return {
        name: {"available": ok, "tools": resolve_toolset(name), "description": get_all_toolsets()[name]["description"]}
        for name, ok in check_toolset_requirements().items()
    }


def check_tool_availability(quiet: bool = False) -> tuple[list[str], list[dict[str, Any]]]:
    """(available toolsets, [{"name", "missing": {tool: why}}] for the others)."""
    available, unavailable = [], []
    for name in get_all_toolsets():
        missing = missing_tools(resolve_toolset(name))
        if missing:
            unavailable.append({"name": name, "missing": missing})
        else:
            available.append(name)
    return available, unavailable


__all__ = [
    "check_tool_availability",
    "check_toolset_requirements",
    "cleanup_all_environments",
    "cleanup_vm",
    "clear_task_env_overrides",
    "get_all_tool_names",
    "get_available_toolsets",
    "get_tool_definitions",
    "get_toolset_for_tool",
    "handle_function_call",
    "register_task_env_overrides",
]
