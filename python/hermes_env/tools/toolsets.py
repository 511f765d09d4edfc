"""Toolsets: hermes-agent's named groups of tools (and its atropos/ integration's sandbox groups), as tools.

``TOOLSETS`` is hermes-agent's table (``toolsets.py``: tools plus included toolsets, ``all``/``*``
for every toolset) with the additions of hermes-agent's atropos/ integration (``filesystem``, ``terminal_stateful``,
``sandbox``, ``default``, ``full``). A registered tool also belongs to the toolset named by its ``toolset``
attribute, so a new tool with a new toolset name forms a new toolset.

Many of hermes-agent's tools need the network or a service a rollout does not have (web search,
browsers, image generation, messaging...). They are listed here by name with the reason: asking
for them (``enabled_toolsets``, ``get_tool_definitions``) raises :class:`ToolsetUnavailableError`
saying which tools are missing and why, instead of dropping them silently. A tool server
(``tool_server_url``) can provide them: its tools are registered by name and count as available.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from hermes_env.errors import ToolsetUnavailableError
from hermes_env.tools.registry import REGISTRY, Tool, ToolRegistry


@dataclass(frozen=True)
class Toolset:
    description: str
    tools: tuple[str, ...] = ()
    includes: tuple[str, ...] = ()
    #: hermes-agent's own table (``None`` enables these); the atropos/ integration's groups are opt-in.
    upstream: bool = True


_BROWSER = (
    "browser_navigate", "browser_snapshot", "browser_click", "browser_type", "browser_scroll",
    "browser_back", "browser_press", "browser_close", "browser_get_images", "browser_vision",
)  # fmt: skip
_RL = (
    "rl_list_environments", "rl_select_environment", "rl_get_current_config", "rl_edit_config",
    "rl_start_training", "rl_check_status", "rl_stop_training", "rl_get_results", "rl_list_runs",
    "rl_test_inference",
)  # fmt: skip
_HA = ("ha_list_entities", "ha_get_state", "ha_list_services", "ha_call_service")
# hermes-agent's _HERMES_CORE_TOOLS: the platform bundles all carry exactly these.
_CORE = (
    "web_search", "web_extract", "terminal", "process", "read_file", "write_file", "patch", "search_files",
    "vision_analyze", "image_generate", "mixture_of_agents", "skills_list", "skill_view", "skill_manage",
    *_BROWSER, "text_to_speech", "todo", "memory", "session_search", "clarify", "execute_code", "delegate_task",
    "schedule_cronjob", "list_cronjobs", "remove_cronjob", "send_message", "query_user_context", *_HA,
)  # fmt: skip

TOOLSETS: dict[str, Toolset] = {
    "web": Toolset("Web research and content extraction tools", ("web_search", "web_extract")),
    "search": Toolset("Web search only (no content extraction/scraping)", ("web_search",)),
    "vision": Toolset("Image analysis and vision tools", ("vision_analyze",)),
    "image_gen": Toolset("Creative generation tools (images)", ("image_generate",)),
    "terminal": Toolset("Terminal/command execution and process management tools", ("terminal", "process")),
    "moa": Toolset("Advanced reasoning and problem-solving tools", ("mixture_of_agents",)),
    "skills": Toolset(
        "Access, create, edit, and manage skill documents with specialized instructions and knowledge",
        ("skills_list", "skill_view", "skill_manage"),
    ),
    "browser": Toolset(
        "Browser automation for web interaction (navigate, click, type, scroll, iframes, hold-click) with web "
        "search for finding URLs",
        (*_BROWSER, "web_search"),
    ),
    "cronjob": Toolset(
        "Cronjob management tools - schedule, list, and remove automated tasks",
        ("schedule_cronjob", "list_cronjobs", "remove_cronjob"),
    ),
    "rl": Toolset("RL training tools for running reinforcement learning on Tinker-Atropos", _RL),
    "file": Toolset(
        "File manipulation tools: read, write, patch (with fuzzy matching), and search (content + files)",
        ("read_file", "write_file", "patch", "search_files"),
    ),
    "tts": Toolset(
        "Text-to-speech: convert text to audio with Edge TTS (free), ElevenLabs, or OpenAI", ("text_to_speech",)
    ),
    "todo": Toolset("Task planning and tracking for multi-step work", ("todo",)),
    "memory": Toolset("Persistent memory across sessions (personal notes + user profile)", ("memory",)),
    "session_search": Toolset("Search and recall past conversations with summarization", ("session_search",)),
    "clarify": Toolset("Ask the user clarifying questions (multiple-choice or open-ended)", ("clarify",)),
    "code_execution": Toolset(
        "Run Python scripts that call tools programmatically (reduces LLM round trips)", ("execute_code",)
    ),
    "delegation": Toolset("Spawn subagents with isolated context for complex subtasks", ("delegate_task",)),
    "honcho": Toolset("Honcho AI-native memory for persistent cross-session user modeling", ("query_user_context",)),
    "homeassistant": Toolset("Home Assistant smart home control and monitoring", _HA),
    "debugging": Toolset("Debugging and troubleshooting toolkit", ("terminal", "process"), ("web", "file")),
    "safe": Toolset("Safe toolkit without terminal access", ("mixture_of_agents",), ("web", "vision", "image_gen")),
    "hermes-cli": Toolset("Full interactive CLI toolset - all default tools plus cronjob management", _CORE),
    "hermes-telegram": Toolset(
        "Telegram bot toolset - full access for personal use (terminal has safety checks)", _CORE
    ),
    "hermes-discord": Toolset(
        "Discord bot toolset - full access (terminal has safety checks via dangerous command approval)", _CORE
    ),
    "hermes-whatsapp": Toolset("WhatsApp bot toolset - similar to Telegram (personal messaging, more trusted)", _CORE),
    "hermes-slack": Toolset("Slack bot toolset - full access for workspace use (terminal has safety checks)", _CORE),
    "hermes-homeassistant": Toolset("Home Assistant bot toolset - smart home event monitoring and control", _CORE),
    "hermes-gateway": Toolset(
        "Gateway toolset - union of all messaging platform tools",
        (),
        ("hermes-telegram", "hermes-discord", "hermes-whatsapp", "hermes-slack", "hermes-homeassistant"),
    ),
    # hermes-agent's atropos/ integration (atropos/tools/toolset_resolver.py)
    "filesystem": Toolset("Read/write files in the sandbox workspace.", ("read_file", "write_file"), upstream=False),
    "terminal_stateful": Toolset(
        "Stateful terminal execution (tmux/TUI support) inside the sandbox.",
        ("terminal_stateful", "tmux"),
        upstream=False,
    ),
    "sandbox": Toolset("Sandbox tools (terminal + filesystem).", (), ("terminal", "filesystem"), upstream=False),
    "default": Toolset("Default toolset for Atropos AgentEnv tasks.", (), ("sandbox",), upstream=False),
    "full": Toolset(
        "All Hermes tools plus Atropos sandbox additions.",
        (),
        ("all", "filesystem", "sandbox", "terminal_stateful"),
        upstream=False,
    ),
}

ALL_ALIASES = frozenset({"all", "*"})

_NETWORK = "needs network access"
# Why each hermes-agent tool that hermes_env does not run is missing (shown when it is asked for).
UNAVAILABLE_TOOLS: dict[str, str] = {
    "web_search": f"{_NETWORK} (a web search API)",
    "web_extract": f"{_NETWORK} (fetches and extracts web pages)",
    "vision_analyze": f"{_NETWORK} (a vision model API)",
    "image_generate": f"{_NETWORK} (an image generation API)",
    "mixture_of_agents": f"{_NETWORK} (calls several hosted models)",
    "text_to_speech": f"{_NETWORK} (a speech synthesis API)",
    "query_user_context": f"{_NETWORK} (Honcho)",
    **dict.fromkeys(_BROWSER, f"{_NETWORK} (a browser session)"),
    **dict.fromkeys(_RL, f"{_NETWORK} (drives a remote training service)"),
    **dict.fromkeys(_HA, f"{_NETWORK} (a Home Assistant server)"),
    **dict.fromkeys(("skills_list", "skill_view", "skill_manage"), "reads and writes the user's ~/.hermes/skills"),
    **dict.fromkeys(("schedule_cronjob", "list_cronjobs", "remove_cronjob"), "needs the hermes-agent gateway"),
    "send_message": "needs the hermes-agent messaging gateway",
    "memory": "hermes-agent's RL loop answers 'Memory is not available in RL environments.'",
    "session_search": "hermes-agent's RL loop answers 'Session search is not available in RL environments.'",
    "clarify": "asks a human, and a rollout has none",
    "delegate_task": "spawns sub-agents that make their own model calls, outside the rollout's trajectory",
}


def get_toolset_names(registry: ToolRegistry = REGISTRY) -> list[str]:
    """Every toolset name: the table's and those only registered tools name."""
    extra = sorted({tool.toolset for tool in registry} - set(TOOLSETS))
    return [*TOOLSETS, *extra]


def get_toolset(name: str) -> dict[str, Any] | None:
    """hermes-agent's ``get_toolset``: ``{"description", "tools", "includes"}`` of a table toolset, or None."""
    spec = TOOLSETS.get(name)
    if spec is None:
        return None
    return {"description": spec.description, "tools": list(spec.tools), "includes": list(spec.includes)}


def get_all_toolsets() -> dict[str, dict[str, Any]]:
    """hermes-agent's ``get_all_toolsets``: every table toolset as ``get_toolset`` gives it."""
    return {name: get_toolset(name) for name in TOOLSETS}  # type: ignore[misc]


def validate_toolset(name: str, registry: ToolRegistry = REGISTRY) -> bool:
    return name in ALL_ALIASES or name in TOOLSETS or any(tool.toolset == name for tool in registry)


def resolve_toolset(name: str, registry: ToolRegistry = REGISTRY, _seen: frozenset[str] = frozenset()) -> list[str]:
    """The tool names of a toolset, included toolsets followed (``all``/``*``: every hermes-agent toolset)."""
    if name in ALL_ALIASES:
        out: set[str] = set()
        for ts in get_toolset_names(registry):
            if TOOLSETS.get(ts, Toolset("", upstream=True)).upstream:
                out.update(resolve_toolset(ts, registry, _seen | {name}))
        return sorted(out)
    if name in _seen:
        return []
    spec = TOOLSETS.get(name)
    tools = set(spec.tools) if spec else set()
    tools.update(tool.name for tool in registry if tool.toolset == name)
    for included in spec.includes if spec else ():
        tools.update(resolve_toolset(included, registry, _seen | {name}))
    return sorted(tools)


def resolve_multiple_toolsets(names: Iterable[str], registry: ToolRegistry = REGISTRY) -> list[str]:
    """The tool names of several toolsets together (hermes-agent's ``resolve_multiple_toolsets``)."""
    return sorted({tool for name in names for tool in resolve_toolset(name, registry)})


def missing_tools(names: Iterable[str], registry: ToolRegistry = REGISTRY) -> dict[str, str]:
    """Of ``names``, the tools that cannot be offered here, with why."""
    missing = {}
    for name in names:
        tool = registry.find(name)
        if tool is None:
            missing[name] = UNAVAILABLE_TOOLS.get(name, "not provided by hermes_env or the tool server")
        elif not tool.is_available():
            missing[name] = tool.unavailable_reason()
    return missing


def is_toolset_available(name: str, registry: ToolRegistry = REGISTRY) -> bool:
    """True when every tool of the toolset can be offered here."""
    return not missing_tools(resolve_toolset(name, registry), registry)


def available_toolsets(registry: ToolRegistry = REGISTRY) -> list[str]:
    """hermes-agent's toolsets (and registered ones) whose tools can all be offered here."""
    return [
        name
        for name in get_toolset_names(registry)
        if TOOLSETS.get(name, Toolset("")).upstream
        and resolve_toolset(name, registry)
        and is_toolset_available(name, registry)
    ]


def _check_names(label: str, names: Sequence[str] | None, registry: ToolRegistry) -> None:
    if names is None:
        return
    if isinstance(names, str):
        raise ValueError(f"{label} must be a list of toolset names, not the string {names!r}")
    unknown = [n for n in names if not validate_toolset(n, registry)]
    if unknown:
        raise ValueError(
            f"unknown toolset(s) in {label}: {', '.join(map(repr, unknown))}; "
            f"valid toolsets: {', '.join(get_toolset_names(registry))}"
        )


def describe_missing(missing: dict[str, str]) -> str:
    """``tool, tool: reason; ...`` with the tools that share a reason grouped."""
    by_reason: dict[str, list[str]] = {}
    for tool, why in sorted(missing.items()):
        by_reason.setdefault(why, []).append(tool)
    return "; ".join(f"{', '.join(tools)}: {why}" for why, tools in by_reason.items())


def unavailable_message(toolsets: Sequence[str], missing: dict[str, str]) -> str:
    detail = describe_missing(missing)
    return (
        f"toolset(s) {', '.join(map(repr, toolsets))} include tools hermes_env cannot offer offline ({detail}); "
        "remove them from enabled_toolsets, add them to disabled_toolsets, or serve them with the tool server "
        "(--env.tool_server_url)"
    )


def resolve_toolsets(
    enabled: Sequence[str] | None,
    disabled: Sequence[str] | None = None,
    registry: ToolRegistry = REGISTRY,
) -> list[str]:
    """The toolsets a rollout gets: ``enabled`` (None: every available hermes-agent toolset) minus ``disabled``.

    Unknown names raise ValueError listing the valid toolsets; an enabled toolset with a tool that
    cannot run here (and is not disabled) raises :class:`ToolsetUnavailableError` naming it and why.
    """
    _check_names("enabled_toolsets", enabled, registry)
    _check_names("disabled_toolsets", disabled, registry)
    drop = set(disabled or ())
    chosen = available_toolsets(registry) if enabled is None else list(dict.fromkeys(enabled))
    chosen = [name for name in chosen if name not in drop]
    dropped_tools = {t for name in drop for t in resolve_toolset(name, registry)}
    needed = {t for name in chosen for t in resolve_toolset(name, registry)} - dropped_tools
    missing = missing_tools(sorted(needed), registry)
    if missing:
        culprits = [name for name in chosen if set(resolve_toolset(name, registry)) & set(missing)]
        raise ToolsetUnavailableError(unavailable_message(culprits, missing))
    return chosen


def tools_for_toolsets(
    toolsets: Iterable[str], disabled: Iterable[str] | None = None, registry: ToolRegistry = REGISTRY
) -> list[Tool]:
    """The tools of ``toolsets`` minus those of ``disabled``, sorted by name (hermes-agent's order);
    tools that cannot run here are left out (``resolve_toolsets`` is where that is an error)."""
    names = {t for ts in toolsets for t in resolve_toolset(ts, registry)}
    names -= {t for ts in disabled or () for t in resolve_toolset(ts, registry)}
    missing = missing_tools(names, registry)
    return [registry.get(name) for name in sorted(names) if name not in missing]


def get_tool_definitions(
    enabled_toolsets: Sequence[str] | None = None,
    disabled_toolsets: Sequence[str] | None = None,
    quiet_mode: bool = True,
    registry: ToolRegistry = REGISTRY,
) -> list[dict]:
    """OpenAI tool schemas for the toolsets, as hermes-agent's ``model_tools.get_tool_definitions`` returns them.

    ``enabled_toolsets=None``: every available hermes-agent toolset. ``disabled_toolsets`` is
    subtracted in every case (hermes-agent applies it only when ``enabled_toolsets`` is None).
    Unknown or unavailable toolsets raise (hermes-agent prints a warning and leaves them out).
    ``quiet_mode`` is accepted for compatibility; nothing is printed either way.
    """
    toolsets = resolve_toolsets(enabled_toolsets, disabled_toolsets, registry)
    return [tool.schema for tool in tools_for_toolsets(toolsets, disabled_toolsets, registry)]


def create_custom_toolset(name: str, description: str, tools: Sequence[str] = (), includes: Sequence[str] = ()) -> None:
    """Add a toolset to the table (hermes-agent's ``toolsets.create_custom_toolset``)."""
    for included in includes:
        if not validate_toolset(included):
            raise ValueError(f"toolset {name!r} includes unknown toolset {included!r}")
    TOOLSETS[name] = Toolset(description, tuple(tools), tuple(includes))
