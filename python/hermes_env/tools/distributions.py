"""Toolset distributions: per-group random toolsets, so a policy learns to work with varied tools.

``DISTRIBUTIONS`` holds hermes-agent's 17 distributions (``toolset_distributions.py``) with their
descriptions and 0–100 weights: each toolset is included independently with probability
``weight / 100``; if the draw comes out empty, the toolset with the highest weight is used (ties:
the first listed), as hermes-agent does. Toolsets hermes_env cannot offer (web, browser, vision,
...) are left out of the draw and a warning says so once per distribution; a distribution left
with no available toolset is an error at configuration time.
"""

from __future__ import annotations

import logging
import random
from typing import Any

from hermes_env.tools.registry import REGISTRY, ToolRegistry
from hermes_env.tools.toolsets import (
    describe_missing,
    is_toolset_available,
    missing_tools,
    resolve_toolset,
    validate_toolset,
)

logger = logging.getLogger(__name__)

# hermes-agent's toolset_distributions.py, in its order: each distribution's toolsets and 0-100 weights ...
_WEIGHTS: dict[str, dict[str, int]] = {
    "default": {"web": 100, "vision": 100, "image_gen": 100, "terminal": 100, "file": 100, "moa": 100, "browser": 100},
    "image_gen": {"image_gen": 90, "vision": 90, "web": 55, "terminal": 45, "moa": 10},
    "research": {"web": 90, "browser": 70, "vision": 50, "moa": 40, "terminal": 10},
    "science": {"web": 94, "terminal": 94, "file": 94, "vision": 65, "browser": 50, "image_gen": 15, "moa": 10},
    "development": {"terminal": 80, "file": 80, "moa": 60, "web": 30, "vision": 10},
    "safe": {"web": 80, "browser": 70, "vision": 60, "image_gen": 60, "moa": 50},
    "balanced": {"web": 50, "vision": 50, "image_gen": 50, "terminal": 50, "file": 50, "moa": 50, "browser": 50},
    "minimal": {"web": 100},
    "terminal_only": {"terminal": 100, "file": 100},
    "terminal_web": {"terminal": 100, "file": 100, "web": 100},
    "creative": {"image_gen": 90, "vision": 90, "web": 30},
    "reasoning": {"moa": 90, "web": 30, "terminal": 20},
    "browser_use": {"browser": 100, "web": 80, "vision": 70},
    "browser_only": {"browser": 100},
    "browser_tasks": {"browser": 97, "vision": 12, "terminal": 15},
    "terminal_tasks": {"terminal": 97, "file": 97, "web": 97, "browser": 75, "vision": 50, "image_gen": 10},
    "mixed_tasks": {"browser": 92, "terminal": 92, "file": 92, "web": 35, "vision": 15, "image_gen": 15},
}
# ... and their descriptions.
_DESCRIPTIONS: dict[str, str] = {
    "default": "All available tools, all the time",
    "image_gen": "Heavy focus on image generation with vision and web support",
    "research": "Web research with vision analysis and reasoning",
    "science": "Scientific research with web, terminal, file, and browser capabilities",
    "development": "Terminal, file tools, and reasoning with occasional web lookup",
    "safe": "All tools except terminal for safety",
    "balanced": "Equal probability of all toolsets",
    "minimal": "Only web tools for basic research",
    "terminal_only": "Terminal and file tools for code execution tasks",
    "terminal_web": "Terminal and file tools with web search for documentation lookup",
    "creative": "Image generation and vision analysis focus",
    "reasoning": "Heavy mixture of agents usage with minimal other tools",
    "browser_use": "Full browser-based web interaction with search, vision, and page control",
    "browser_only": "Only browser automation tools for pure web interaction tasks",
    "browser_tasks": (
        "Browser-focused distribution (browser toolset includes web_search for finding URLs since "
        "Google blocks direct browser searches)"
    ),
    "terminal_tasks": "Terminal-focused distribution with high terminal/file availability, occasional other tools",
    "mixed_tasks": "Mixed distribution with high browser, terminal, and file availability for complex tasks",
}
DISTRIBUTIONS: dict[str, dict[str, Any]] = {
    name: {"description": _DESCRIPTIONS[name], "toolsets": toolsets} for name, toolsets in _WEIGHTS.items()
}

_warned: set[tuple[str, tuple[str, ...]]] = set()


def _check(name: str, weights: dict[str, Any], registry: ToolRegistry) -> None:
    if not weights:
        raise ValueError(f"distribution {name!r} lists no toolsets")
    unknown = sorted(t for t in weights if not validate_toolset(t, registry))
    if unknown:
        raise ValueError(f"distribution {name!r} names unknown toolset(s) {unknown}")
    for toolset, w in weights.items():
        if not isinstance(w, int | float) or isinstance(w, bool) or not 0 <= w <= 100:
            raise ValueError(
                f"distribution {name!r}: the weight of {toolset!r} must be a number in [0, 100], got {w!r}"
            )
    if max(weights.values()) <= 0:
        raise ValueError(f"distribution {name!r}: at least one toolset needs a weight above 0")


def register_distribution(
    name: str, toolsets: dict[str, float], *, description: str = "", replace: bool = False
) -> None:
    """Add a named distribution: toolset -> inclusion weight in [0, 100] (hermes-agent's percent scale)."""
    if name in DISTRIBUTIONS and not replace:
        raise ValueError(f"distribution {name!r} already exists (pass replace=True to override)")
    _check(name, toolsets, REGISTRY)
    DISTRIBUTIONS[name] = {"description": description, "toolsets": dict(toolsets)}


def get_distribution(name: str) -> dict[str, Any] | None:
    """hermes-agent's ``get_distribution``: the definition (description, toolsets), or None."""
    return DISTRIBUTIONS.get(name)


def list_distributions() -> dict[str, dict[str, Any]]:
    return dict(DISTRIBUTIONS)


def validate_distribution(name: str) -> bool:
    return name in DISTRIBUTIONS


def distribution_weights(name: str) -> dict[str, float]:
    """toolset -> weight of a distribution; ValueError listing the valid names for an unknown one."""
    dist = DISTRIBUTIONS.get(name)
    if dist is None:
        raise ValueError(f"unknown toolset distribution {name!r}; valid distributions: {', '.join(DISTRIBUTIONS)}")
    return dict(dist["toolsets"])


def available_weights(name: str, registry: ToolRegistry = REGISTRY) -> dict[str, float]:
    """The distribution's toolsets that can be offered here, warning once about the ones left out."""
    weights = distribution_weights(name)
    left_out = tuple(t for t in weights if not is_toolset_available(t, registry))
    if left_out and (name, left_out) not in _warned:
        _warned.add((name, left_out))
        missing = missing_tools({tool for t in left_out for tool in resolve_toolset(t, registry)}, registry)
        logger.warning(
            "distribution %r: toolset(s) %s cannot be offered here (%s); sampling from the rest: %s",
            name,
            ", ".join(left_out),
            describe_missing(missing),
            ", ".join(t for t in weights if t not in left_out) or "none",
        )
    return {t: w for t, w in weights.items() if t not in left_out}


def check_distribution(name: str, disabled: list[str] | None = None, registry: ToolRegistry = REGISTRY) -> None:
    """Configuration-time check: the distribution exists and can draw at least one usable toolset."""
    weights = available_weights(name, registry)
    usable = [t for t, w in weights.items() if w > 0 and t not in set(disabled or ())]
    if not usable:
        raise ValueError(
            f"distribution {name!r} can draw no toolset here: of {sorted(distribution_weights(name))}, the available "
            f"ones {sorted(weights) or '(none)'} are all disabled or weighted 0; pick another distribution "
            "(terminal_only, development, terminal_tasks...) or enable toolsets explicitly"
        )


def sample_toolsets_from_distribution(
    distribution_name: str, rng: random.Random | None = None, registry: ToolRegistry = REGISTRY
) -> list[str]:
    """One draw (hermes-agent's rule): each available toolset with probability weight/100; never empty."""
    rng = rng or random.Random()
    weights = available_weights(distribution_name, registry)
    chosen = [toolset for toolset, weight in weights.items() if rng.random() * 100 < weight]
    if not chosen and weights:
        best = max(weights.values())
        chosen = [next(t for t, w in weights.items() if w == best)]
    return chosen


for _name, _dist in DISTRIBUTIONS.items():
    _check(_name, _dist["toolsets"], REGISTRY)
