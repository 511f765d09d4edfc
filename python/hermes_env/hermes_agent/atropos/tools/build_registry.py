"""hermes-agent's ``build_tool_registry``: the tools of the enabled toolsets, minus the disabled ones."""

from __future__ import annotations

import logging

from hermes_env.hermes_agent.atropos.tools.base import ToolRegistry

logger = logging.getLogger(__name__)
_WARNED: set[str] = set()


def resolve_toolsets_leniently(enabled: list[str] | None, disabled: list[str] | None) -> list[str]:
    """``enabled`` minus ``disabled``, as upstream resolves them: a toolset with tools that cannot run here (web
    without keys, browser, skills without a tool server providing them) keeps only its tools that can, with one
    warning naming what was left out, instead of the error hermes_env's own ``resolve_toolsets`` raises."""
    from hermes_env.errors import ToolsetUnavailableError
    from hermes_env.tools.toolsets import resolve_toolsets

    kept: list[str] = []
    for name in enabled if enabled is not None else [None]:  # type: ignore[list-item]
        try:
            resolved = resolve_toolsets(None if name is None else [name], disabled)
        except ToolsetUnavailableError as err:
            if str(err) not in _WARNED:  # once per process, not once per group
                _WARNED.add(str(err))
                logger.warning("%s; its other tools are offered (as hermes-agent's requirement checks do)", err)
            resolved = [] if name in (disabled or ()) else [name]
        kept += [ts for ts in resolved if ts not in kept]
    return kept


def build_tool_registry(
    enabled_toolsets: list[str] | None = None,
    disabled_toolsets: list[str] | None = None,
    tool_server_url: str | None = None,
) -> ToolRegistry:
    """A :class:`ToolRegistry` of hermes_env's tools for these toolsets (``tool_server_url``: the tool server's
    tools are those registered by the environment's ``connect_tool_server``)."""
    from hermes_env.tools.toolsets import tools_for_toolsets

    toolsets = resolve_toolsets_leniently(enabled_toolsets or ["default"], disabled_toolsets)
    return ToolRegistry(tools_for_toolsets(toolsets, disabled_toolsets))
