"""The patch tool's matching chain (hermes-agent's strategies and thresholds)."""

from __future__ import annotations

import pytest
from hermes_env.tools.fuzzy_match import find_matches, fuzzy_find_and_replace
from hypothesis import given
from hypothesis import strategies as st

CODE = "def f(x):\n    if x:\n        return 1\n    return 2\n"


@pytest.mark.parametrize(
    ("old", "strategy"),
    [
        ("        return 1", "exact"),
        ("if x:\n  return 1", "line_trimmed"),
        ("if  x:", "whitespace_normalized"),
        ("def f(x):\nif x:\n return 1", "line_trimmed"),
        ("    if x:\\n        return 1", "escape_normalized"),
        ("if x:\n        return 1   ", "line_trimmed"),
        ("def f(x):\n    if y:\n        return 1\n    return 2", "block_anchor"),
        ("def f(x):\n    iff xx:\n        retrn 1", "context_aware"),
    ],
)
def test_each_strategy_finds_its_case(old: str, strategy: str) -> None:
    name, spans = find_matches(CODE, old)
    assert name == strategy and len(spans) == 1


def test_replacement_keeps_the_rest_and_reports_errors() -> None:
    new, count, error = fuzzy_find_and_replace(CODE, "return 1", "return 3")
    assert (count, error) == (1, None) and new == CODE.replace("return 1", "return 3")
    assert fuzzy_find_and_replace(CODE, "", "x") == (CODE, 0, "old_string cannot be empty")
    assert fuzzy_find_and_replace(CODE, "x", "x")[2] == "old_string and new_string are identical"
    assert fuzzy_find_and_replace(CODE, "completely different\ntext here\nnothing", "y")[:2] == (CODE, 0)
    _, count, error = fuzzy_find_and_replace("aaa", "aa", "b")
    assert count == 0 and error is not None and "Found 2 matches" in error  # overlapping: ambiguous
    assert fuzzy_find_and_replace("a a a", "a", "b", replace_all=True) == ("b b b", 3, None)


def test_whitespace_normalized_maps_back_to_the_original_span() -> None:
    text = "x =\t\t1  # keep\ny = 2\n"
    new, count, _ = fuzzy_find_and_replace(text, "x = 1 #", "x = 5 #")
    assert count == 1 and new == "x = 5 # keep\ny = 2\n"


@given(
    st.text(alphabet="ab \n\t", max_size=40), st.text(alphabet="ab \n\t", min_size=1, max_size=8), st.text(max_size=5)
)
def test_exact_unique_matches_replace_exactly(content: str, old: str, new: str) -> None:
    result, count, error = fuzzy_find_and_replace(content, old, new)
    if error is not None:
        assert (result, count) == (content, 0)  # a failure never changes the text
    elif content.count(old) == 1 and old not in content[content.index(old) + 1 :]:
        assert result == content.replace(old, new) and count == 1


@given(st.text(alphabet="xyz\n ", max_size=30), st.text(alphabet="xyz\n ", min_size=1, max_size=6))
def test_replace_all_leaves_no_exact_occurrence_it_matched(content: str, old: str) -> None:
    result, count, error = fuzzy_find_and_replace(content, old, "#", replace_all=True)
    if error is None and old in content:
        assert count >= 1 and "#" in result
