"""Toolset resolution and distribution sampling."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hermes_env.tools import DISTRIBUTIONS, register_distribution, resolve_toolsets, sample_toolsets
from hermes_env.tools.distributions import get_distribution


def test_resolve_all_available_by_default() -> None:
    assert resolve_toolsets(None) == ["file", "terminal", "todo"]
    assert resolve_toolsets(None, ["todo"]) == ["file", "terminal"]
    assert resolve_toolsets(["terminal", "file", "terminal"]) == ["file", "terminal"]
    assert resolve_toolsets(["terminal"], ["terminal"]) == []


@pytest.mark.parametrize(
    ("enabled", "disabled", "label"), [(["terminal", "web"], None, "enabled"), (None, ["gpu"], "disabled")]
)
def test_unknown_toolsets_named_with_valid_ones(
    enabled: list[str] | None, disabled: list[str] | None, label: str
) -> None:
    with pytest.raises(ValueError) as info:
        resolve_toolsets(enabled, disabled)
    msg = str(info.value)
    assert f"in {label}_toolsets" in msg and "valid toolsets: file, terminal, todo" in msg


def test_a_bare_string_is_rejected() -> None:
    with pytest.raises(ValueError, match="must be a list"):
        resolve_toolsets("terminal")  # type: ignore[arg-type]


def test_unknown_distribution_lists_valid_ones() -> None:
    with pytest.raises(ValueError, match="unknown toolset distribution 'nope'; valid distributions: default"):
        sample_toolsets("nope", random.Random(0))


@pytest.mark.parametrize("name", sorted(DISTRIBUTIONS))
def test_samples_are_never_empty_and_only_listed_toolsets(name: str) -> None:
    rng = random.Random(1234)
    probs = get_distribution(name)
    for _ in range(500):
        drawn = sample_toolsets(name, rng)
        assert drawn and set(drawn) <= set(probs)
        assert len(drawn) == len(set(drawn))


def test_inclusion_frequencies_match_probabilities() -> None:
    # balanced: 0.6 / 0.6 / 0.5, independent. P(empty) = 0.4*0.4*0.5 = 0.08 and forces 'terminal' (first of the
    # most likely), so the expected inclusion of terminal is 0.6 + 0.08; the others keep their probability.
    rng = random.Random(7)
    n = 20_000
    counts: Counter[str] = Counter()
    for _ in range(n):
        counts.update(sample_toolsets("balanced", rng))
    expected = {"terminal": 0.68, "file": 0.6, "todo": 0.5}
    for toolset, p in expected.items():
        # 5 standard deviations of a binomial proportion: a wrong rule (e.g. resampling) lands outside.
        tol = 5 * (p * (1 - p) / n) ** 0.5
        assert abs(counts[toolset] / n - p) < tol, (toolset, counts[toolset] / n)


def test_empty_draw_forces_the_most_likely_toolset() -> None:
    class AlwaysOne(random.Random):
        def random(self) -> float:
            return 0.99999

    register_distribution("_test_sparse", {"todo": 0.1, "file": 0.3, "terminal": 0.3}, replace=True)
    assert sample_toolsets("_test_sparse", AlwaysOne()) == ["file"]


def test_same_seed_same_draws() -> None:
    a = [sample_toolsets("default", random.Random(42)) for _ in range(3)]
    b = [sample_toolsets("default", random.Random(42)) for _ in range(3)]
    assert a == b


@pytest.mark.parametrize(
    ("probs", "message"),
    [
        ({}, "lists no toolsets"),
        ({"web": 1.0}, "unknown toolset"),
        ({"terminal": 1.5}, "must be in \\[0, 1\\]"),
        ({"terminal": 0.0}, "above 0"),
    ],
)
def test_register_distribution_validates(probs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        register_distribution("_test_bad", probs)
    assert "_test_bad" not in DISTRIBUTIONS
