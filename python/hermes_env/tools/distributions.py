"""Toolset distributions: per-group random toolsets, so a policy learns to work with varied tools.

A distribution maps each toolset to an independent inclusion probability. ``sample_toolsets``
draws each toolset with its probability; if the draw comes out empty it forces in the most
likely toolset (ties: the first listed) rather than resampling, so sampling always takes
exactly one pass and the empty case has a fixed, documented outcome.
"""

from __future__ import annotations

import random

from hermes_env.tools.toolsets import TOOLSETS

DISTRIBUTIONS: dict[str, dict[str, float]] = {
    # Every tool, todo only sometimes (most tasks are short).
    "default": {"terminal": 1.0, "file": 0.9, "todo": 0.3},
    "all": {"terminal": 1.0, "file": 1.0, "todo": 1.0},
    "terminal_only": {"terminal": 1.0},
    "file_only": {"file": 1.0},
    # Mostly file tools; the shell appears in half the groups so the model learns both routes.
    "file_heavy": {"file": 1.0, "terminal": 0.5, "todo": 0.2},
    # Each toolset as often as not: the policy sees many combinations.
    "balanced": {"terminal": 0.6, "file": 0.6, "todo": 0.5},
    "no_terminal": {"file": 1.0, "todo": 0.5},
}


def _check(name: str, probs: dict[str, float], known: set[str]) -> None:
    if not probs:
        raise ValueError(f"distribution {name!r} lists no toolsets")
    unknown = sorted(set(probs) - known)
    if unknown:
        raise ValueError(f"distribution {name!r} names unknown toolset(s) {unknown}; valid: {sorted(known)}")
    for toolset, p in probs.items():
        if not isinstance(p, int | float) or isinstance(p, bool) or not 0.0 <= p <= 1.0:
            raise ValueError(f"distribution {name!r}: probability of {toolset!r} must be in [0, 1], got {p!r}")
    if max(probs.values()) <= 0.0:
        raise ValueError(f"distribution {name!r}: at least one toolset needs a probability above 0")


def register_distribution(name: str, probs: dict[str, float], *, replace: bool = False) -> None:
    """Add a named distribution (validated: known toolsets, probabilities in [0, 1], one above 0)."""
    from hermes_env.tools.registry import REGISTRY

    if name in DISTRIBUTIONS and not replace:
        raise ValueError(f"distribution {name!r} already exists (pass replace=True to override)")
    _check(name, probs, set(REGISTRY.toolsets()) | set(TOOLSETS))
    DISTRIBUTIONS[name] = dict(probs)


def get_distribution(name: str) -> dict[str, float]:
    probs = DISTRIBUTIONS.get(name)
    if probs is None:
        raise ValueError(f"unknown toolset distribution {name!r}; valid distributions: {', '.join(DISTRIBUTIONS)}")
    return dict(probs)


def sample_toolsets(distribution: str, rng: random.Random) -> list[str]:
    """One draw: each toolset included independently; never empty (see the module docstring)."""
    probs = get_distribution(distribution)
    chosen = [toolset for toolset, p in probs.items() if rng.random() < p]
    if not chosen:
        best = max(probs.values())
        chosen = [next(t for t, p in probs.items() if p == best)]
    return chosen


for _name, _probs in DISTRIBUTIONS.items():
    _check(_name, _probs, set(TOOLSETS))
