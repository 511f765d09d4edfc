"""hermes-agent's ``toolset_distributions`` module, from :mod:`hermes_env.tools.distributions`.

``sample_toolsets_from_distribution(name)`` draws as upstream does (each toolset with probability weight/100,
never nothing), from the toolsets that can run here: the others are left out with one warning, as upstream's
``get_tool_definitions`` leaves out the tools whose requirements are missing.
"""

from __future__ import annotations

import random

from hermes_env.tools.distributions import (
    DISTRIBUTIONS,
    get_distribution,
    list_distributions,
    validate_distribution,
)
from hermes_env.tools.distributions import sample_toolsets_from_distribution as _sample


def sample_toolsets_from_distribution(distribution_name: str, rng: random.Random | None = None) -> list[str]:
    """One draw of the distribution's toolsets; ValueError naming the valid distributions for an unknown name."""
    return _sample(distribution_name, rng)


__all__ = [
    "DISTRIBUTIONS",
    "get_distribution",
    "list_distributions",
    "sample_toolsets_from_distribution",
    "validate_distribution",
]
