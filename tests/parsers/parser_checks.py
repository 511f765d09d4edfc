"""Shared checks for every parser: streaming invariants, nothing lost, conformance comparison.

The conformance and property tests are tables over parser names; everything format-independent
that they assert lives here, so adding a format adds a row, not a check.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Sequence
from typing import Any

from hermes_env.parsers import (
    ContentDelta,
    Parser,
    ParseResult,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
)

# Parser names that share another name's conformance file (vLLM registry aliases).
CONFORMANCE_FILE: dict[str, str] = {
    "qwen": "hermes",
    "glm47": "glm45",
    "qwen3_xml": "qwen3_coder",
    "llama4_json": "llama3_json",
}


def conformance_name(parser: str) -> str:
    return CONFORMANCE_FILE.get(parser, parser)


def chunks_fixed(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def chunks_random(text: str, seed: int | str, max_size: int = 16) -> list[str]:
    rng = random.Random(seed)
    out, i = [], 0
    while i < len(text):
        n = rng.randint(1, max_size)
        out.append(text[i : i + n])
        i += n
    return out


def chunks_at(text: str, cuts: Iterable[int]) -> list[str]:
    points = sorted({c for c in cuts if 0 < c < len(text)})
    bounds = [0, *points, len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


def run_stream(parser: Parser, chunks: Sequence[str]) -> tuple[list[Any], ParseResult]:
    s = parser.stream()
    events: list[Any] = []
    for c in chunks:
        events += s.feed(c)
    events += s.finish()
    return events, s.result()


def check_stream(events: list[Any], result: ParseResult) -> None:
    """DESIGN.md §1 streaming invariants for one run."""
    content = "".join(e.text for e in events if isinstance(e, ContentDelta))
    assert content == (result.content or ""), "concatenated ContentDelta != result.content"
    calls = result.tool_calls
    starts = [e for e in events if isinstance(e, ToolCallStart)]
    assert [e.index for e in starts] == list(range(len(calls))), "ToolCallStart once per call, indices 0..n-1"
    assert [e.name for e in starts] == [c.name for c in calls]
    assert [e.id for e in starts] == [c.id for c in calls]
    args: dict[int, list[str]] = {}
    state: dict[int, str] = {}
    for e in events:
        if isinstance(e, ToolCallStart):
            state[e.index] = "open"
        elif isinstance(e, ToolCallArgsDelta):
            assert state.get(e.index) == "open", f"arguments of call {e.index} outside start..end"
            args.setdefault(e.index, []).append(e.text)
        elif isinstance(e, ToolCallEnd):
            assert state.get(e.index) == "open", f"ToolCallEnd({e.index}) without an open call"
            state[e.index] = "closed"
        else:
            assert isinstance(e, ContentDelta), f"unknown event {e!r}"
    assert all(v == "closed" for v in state.values()), "every call is ended by finish()"
    for i, c in enumerate(calls):
        assert "".join(args.get(i, [])) == c.arguments, f"args deltas of call {i} != its arguments"


def _nonws(s: str) -> str:
    return "".join(s.split())


def check_nothing_lost(text: str, result: ParseResult) -> None:
    """The rule every parser keeps on every input:

    - content invents nothing: its non-whitespace characters are a subsequence of the text's;
    - when no call was extracted, every non-whitespace character of the text is in content
      (what is not returned as a call is returned as content).
    """
    content = _nonws(result.content or "")
    source = iter(_nonws(text))
    assert all(ch in source for ch in content), "content has text that is not in the output, or reordered"
    if not result.tool_calls:
        assert content == _nonws(text), "no call extracted, but some text is missing from content"


def _calls_of(result: ParseResult) -> list[tuple[str, Any]]:
    out = []
    for c in result.tool_calls:
        try:
            args: Any = json.loads(c.arguments)
        except ValueError:
            args = ("<not JSON>", c.arguments)
        out.append((c.name, args))
    return out


def _calls_of_record(rec: dict[str, Any]) -> list[tuple[str, Any]]:
    out = []
    for c in rec["tool_calls"]:
        args = c.get("arguments")
        if args is None and "arguments_raw" in c:
            args = ("<not JSON>", c["arguments_raw"])
        out.append((c["name"], args))
    return out


def _norm(content: str | None) -> str | None:
    return (content or "").strip() or None


def conformance_mismatch(case: dict[str, Any], result: ParseResult) -> str | None:
    """For a well-formed case: None when the result means what vLLM or the text says.

    Calls (names, JSON-equal arguments) must equal `expected`'s or `intended`'s. Content must
    equal `expected`'s or `intended`'s, or differ from `intended`'s only by surrounding
    whitespace (`intended` is recorded before any whitespace handling, vLLM keeps text before the
    first call verbatim).
    """
    ours_calls = _calls_of(result)
    exp, intended = case["expected"], case["intended"]
    options = [r for r in (exp, intended) if r is not None]
    if not any(ours_calls == _calls_of_record(r) for r in options):
        return f"calls {ours_calls!r} match neither expected nor intended {[_calls_of_record(r) for r in options]!r}"
    contents = [r["content"] for r in options]
    if result.content in contents:
        return None
    if intended is not None and _norm(result.content) == _norm(intended["content"]):
        return None
    return f"content {result.content!r} matches neither of {contents!r}"
