"""The registry's format facts (`parser_info`) and what is derived from them.

`detect_parser`, the tests' markup (`parser_checks.MARKUP`), the aliases' conformance files and
the marker tokens of the benchmark tokenizer all read `parser_info`; these tests check the facts
are there for every name and that what depends on them still answers as before.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hermes_env.parsers import detect, list_parsers, parser_info

from .parser_checks import MARKUP, conformance_name

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", list_parsers())
def test_every_parser_has_its_formats_info(name: str) -> None:
    info = parser_info(name)
    assert info.name == name
    own = parser_info(info.format)
    assert own.format == info.format, "an alias points to a format, not to another alias"
    for field in ("special_tokens", "text_markup", "call_syntax", "call_ids"):
        assert getattr(info, field) == getattr(own, field), field
    assert info.markup == info.special_tokens + info.text_markup
    if name != "auto":
        assert info.detection is not None
        assert conformance_name(name) in MARKUP


def test_unknown_name_lists_the_parsers() -> None:
    with pytest.raises(ValueError, match='unknown tool-call parser "nope"; use one of: auto, '):
        parser_info("nope")


def test_detection_order_is_total() -> None:
    rules = detect._rules()
    assert len({r.detection.rank for r in rules}) == len(rules)
    assert {r.parser for r in rules} == {parser_info(n).format for n in list_parsers()} - {"auto"}
    assert set(detect._REFINE) <= {r.parser for r in rules}
    assert rules[-1].parser == "hermes", "<tool_call> is in other formats' templates: Hermes is tried last"


def test_marker_tokens_are_one_token_each() -> None:
    pytest.importorskip("transformers")
    from hermes_env.parsers.token_deltas import MARKER_TOKENS, qwen3_tokenizer

    tok = qwen3_tokenizer()
    every = {t for n in list_parsers() for t in parser_info(n).special_tokens}
    assert set(MARKER_TOKENS) == every
    for marker in MARKER_TOKENS:
        assert len(tok(marker, add_special_tokens=False)["input_ids"]) == 1, marker


def test_readme_lists_every_parser() -> None:
    """The README's parser list names exactly the registered parsers."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Tool-call parsers", 1)[1].split("```python", 1)[0]
    listed = set(re.findall(r"`([a-z][a-z0-9_]*)`", section))
    assert listed == set(list_parsers())
