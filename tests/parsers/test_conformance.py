"""Every registered parser x every case of its conformance file x whole-text and streaming modes.

Table-driven: a parser is tested here as soon as it is registered and
`tests/data/conformance/<name>.jsonl` exists (an alias reads its format's file: `conformance_name`
in parser_checks.py). A conformance file with no registered parser yet is skipped with a reason.

Checks (see parser_checks.py for the exact rules):
- every case, every mode: no exception; the streaming invariants; `stream.result() == parse()`;
  nothing lost;
- well-formed cases: calls and content equal vLLM's `expected` or the text's `intended`;
  issues only of kind `unknown_tool`;
- malformed and truncated cases: at least one issue says what is wrong, unless the parser took
  nothing of the text for a call (no calls, content == text: e.g. a stray end marker, or output
  cut inside a start marker, which is just text).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hermes_env.parsers import get_parser, guess_parser, list_parsers

from .parser_checks import (
    check_nothing_lost,
    check_stream,
    chunks_fixed,
    chunks_random,
    conformance_mismatch,
    conformance_name,
    run_stream,
)

try:
    from tests.conftest import CONFORMANCE_DIR, load_conformance
except ImportError:  # tests/ is not a package in this checkout
    from conftest import CONFORMANCE_DIR, load_conformance  # type: ignore[no-redef]

MODES = ["parse", "stream_whole", "stream_1char", "stream_random"]

# Corpus `malformed` variants (by `note`) that are valid forms of the format, which the parser
# accepts by design without an issue: the corpus was recorded with one tokenizer generation.
ACCEPTED_FORMS: dict[str, set[str]] = {
    # Mistral's pre-v11 `[TOOL_CALLS] [{...}]` array and v11's `NAME{...}` without `[ARGS]`.
    "mistral": {"pre_v11_array", "name_brace_no_args_token"},
    # Llama 3.x JSON calls name their arguments "parameters"; vLLM (and we) accept "arguments" too.
    "llama3_json": {"arguments_key_instead"},
    "llama4_json": {"arguments_key_instead"},
    # InternLM2 writes "parameters"; vLLM (and we) accept "arguments" too.
    "internlm": {"arguments_key", "arguments_key_instead"},
}


# Known defects, by conformance file: case ids where the parser still loses text that is neither
# content nor a call (nothing is lost). The test checks they still lose text, so a
# fix must also remove the entry. (qwen3_coder and glm45 had 4 each; fixed.)
KNOWN_TEXT_LOSS: dict[str, set[str]] = {}


# Well-formed outputs whose string value holds the format's whole call-closing markup (a value's
# end marker, whitespace, then the call's end: `</parameter>\n</function>` in a file being
# written). A streaming parser must end the call at its closing markup (the parsers'
# promptness rule) and cannot know that more value text follows, so it ends the call there, as vLLM
# does: the calls equal vLLM's `expected`, and the rest of the value, which vLLM drops, is kept
# as content with an issue. Keyed by conformance file; the pattern is looked for in the
# `intended` string arguments.
CLOSING_MARKUP_IN_VALUE: dict[str, re.Pattern[str]] = {
    "qwen3_coder": re.compile(r"</parameter>\s*</function>"),
    "glm45": re.compile(r"</arg_value>\s*</tool_call>"),
}


def _closing_markup_in_value(case: dict[str, Any]) -> bool:
    pattern = CLOSING_MARKUP_IN_VALUE.get(conformance_name(case["parser"]))
    if pattern is None or not case.get("intended"):
        return False
    strings = [v for c in case["intended"]["tool_calls"] for v in (c["arguments"] or {}).values() if isinstance(v, str)]
    return any(pattern.search(v) for v in strings)


def _check_closed_at_markup(case: dict[str, Any], result: Any) -> None:
    """A case of `CLOSING_MARKUP_IN_VALUE`: vLLM's calls; what vLLM drops is content, reported."""
    calls_only = {**case, "intended": None, "expected": {**case["expected"], "content": result.content}}
    problem = conformance_mismatch(calls_only, result)
    assert problem is None, f"{case['id']}: {problem}"
    assert result.content, f"{case['id']}: the value text after the closing markup must be content"
    kinds = {i.kind for i in result.issues}
    allowed = {"unknown_tool", "unexpected_text", "malformed_markup"}
    assert kinds and kinds <= allowed, f"{case['id']}: {result.issues!r}"


def _targets() -> list[str]:
    names = set(list_parsers())
    files = {p.stem for p in Path(CONFORMANCE_DIR).glob("*.jsonl")} if Path(CONFORMANCE_DIR).is_dir() else set()
    names |= files
    names |= {name for name in list_parsers() if conformance_name(name) in files}
    return sorted(names)


def _cases(parser: str) -> list[Any]:
    """(parser, case) params; resolved at collection so each case is its own test id."""
    file = conformance_name(parser)
    path = Path(CONFORMANCE_DIR) / f"{file}.jsonl"
    if parser not in list_parsers():
        return [pytest.param(parser, None, marks=pytest.mark.skip(reason=f"{parser}: not implemented yet"), id=parser)]
    if not path.is_file():
        return [pytest.param(parser, None, marks=pytest.mark.skip(reason=f"no conformance file {path}"), id=parser)]
    return [pytest.param(parser, i, id=f"{parser}-{i:04d}") for i in range(_count_lines(path))]


def _count_lines(path: Path) -> int:
    with path.open(encoding="utf-8") as f:
        return sum(1 for line in f if line.strip())


_CACHE: dict[str, list[dict[str, Any]]] = {}


def _case(parser: str, index: int) -> dict[str, Any]:
    file = conformance_name(parser)
    if file not in _CACHE:
        _CACHE[file] = load_conformance(file)
    return _CACHE[file][index]


PARAMS = [p for name in _targets() for p in _cases(name)]


@pytest.mark.conformance
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("parser_name", "index"), PARAMS)
def test_case(parser_name: str, index: int, mode: str) -> None:
    case = _case(parser_name, index)
    parser = get_parser(parser_name, tools=case["tools"])
    text: str = case["text"]
    whole = parser.parse(text)
    if mode == "parse":
        result = whole
    else:
        chunks = {
            "stream_whole": [text],
            "stream_1char": chunks_fixed(text, 1),
            "stream_random": chunks_random(text, case["id"]),
        }[mode]
        events, result = run_stream(parser, chunks)
        check_stream(events, result)
        assert result == whole, f"{case['id']}: stream result differs from parse()"
    known_loss = case["id"] in KNOWN_TEXT_LOSS.get(conformance_name(parser_name), ())
    check_nothing_lost(parser_name, text, result, known_loss=known_loss)
    if case["well_formed"] and _closing_markup_in_value(case):
        _check_closed_at_markup(case, result)
    elif case["well_formed"]:
        problem = conformance_mismatch(case, result)
        assert problem is None, f"{case['id']} ({case['category']}, {case.get('note')}): {problem}"
        kinds = {i.kind for i in result.issues}
        assert kinds <= {"unknown_tool"}, f"{case['id']}: well-formed output reported {result.issues!r}"
    elif case["category"] in ("malformed", "truncated") and case.get("note") not in ACCEPTED_FORMS.get(parser_name, ()):
        untouched = not result.tool_calls and result.content == (text or None)
        assert result.issues or untouched, f"{case['id']} ({case.get('note')}): malformed output without a ParseIssue"


def test_unknown_tool_cases_are_reported() -> None:
    """With the request's tools given, calls to other names are kept and reported."""
    if "hermes" not in list_parsers() or not (Path(CONFORMANCE_DIR) / "hermes.jsonl").is_file():
        pytest.skip("needs hermes and its conformance file")
    cases = [c for c in load_conformance("hermes") if c["category"] == "unknown_tool"]
    assert cases
    for case in cases:
        r = get_parser("hermes", tools=case["tools"]).parse(case["text"])
        known = {t["function"]["name"] for t in case["tools"]}
        unknown = [c.name for c in r.tool_calls if c.name not in known]
        assert unknown and len([i for i in r.issues if i.kind == "unknown_tool"]) == len(unknown), case["id"]


# Where each parser is allowed to answer `intended` instead of vLLM's `expected` on well-formed
# output (README "vLLM behaviour worth knowing"); everywhere else it must equal vLLM.
INTENDED_OVER_EXPECTED: dict[str, set[str]] = {
    "hermes": {"end_marker_in_string"},
    "qwen": {"end_marker_in_string"},
    "longcat": {"end_marker_in_string"},
    "deepseek_v3": set(),
    "deepseek_v31": {"end_marker_in_string"},
    "kimi_k2": {"end_marker_in_string"},
    "mistral": {"end_marker_in_string"},
    # An empty output: content None where vLLM returns "".
    "llama3_json": {"no_call"},
    "llama4_json": {"no_call"},
    "jamba": {"end_marker_in_string"},
    "granite": set(),
    # An output that is only a fenced / tagged array: content None where vLLM returns "".
    "xlam": {"whitespace"},
    # vLLM raises on marker text inside an argument; an empty output gives None, not "".
    "internlm": {"end_marker_in_string", "no_call"},
}


@pytest.mark.conformance
@pytest.mark.parametrize("parser_name", sorted(INTENDED_OVER_EXPECTED))
def test_differs_from_vllm_only_where_documented(parser_name: str) -> None:
    if parser_name not in list_parsers():
        pytest.skip(f"{parser_name}: not implemented yet")
    differing = []
    for case in load_conformance(conformance_name(parser_name)):
        if not case["well_formed"]:
            continue
        result = get_parser(parser_name, tools=case["tools"]).parse(case["text"])
        if conformance_mismatch({**case, "intended": None}, result) is not None:
            differing.append((case["id"], case["category"]))
    unexpected = [d for d in differing if d[1] not in INTENDED_OVER_EXPECTED[parser_name]]
    assert not unexpected, f"differs from vLLM outside the documented categories: {unexpected}"


@pytest.mark.conformance
@pytest.mark.parametrize("file", sorted(p.stem for p in Path(CONFORMANCE_DIR).glob("*.jsonl")))
def test_auto_reads_each_corpus_as_its_format(file: str) -> None:
    """`auto` on every corpus output whose first known marker names the file's format: the
    result of that format's own parser (the output's other cases, without a marker, are content)."""
    checked = 0
    for case in load_conformance(file):
        text = case["text"]
        guessed = guess_parser(text)
        own = get_parser(file, tools=case["tools"]).parse(text)
        auto = get_parser("auto", tools=case["tools"]).parse(text)
        if guessed is None:
            assert not auto.tool_calls and auto.content == (text or None), case["id"]
        elif conformance_name(guessed) == file:
            assert auto == own, f"{case['id']}: auto read it differently from {file}"
            checked += 1
    # Formats without a distinctive start marker (bare JSON, bare Python lists) are not guessed.
    assert checked or file in {"llama3_json", "pythonic", "xlam"}, f"auto recognised no {file} output"
