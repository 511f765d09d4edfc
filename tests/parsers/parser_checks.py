"""Shared checks for every parser: streaming invariants, nothing lost, conformance comparison.

The conformance and property tests are tables over parser names; everything format-independent
that they assert lives here, and what is format-specific (aliases, markup) comes from the
registry (`parser_info`), so adding a format adds a registry row, not a check.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from hermes_env.parsers import (
    ContentDelta,
    Parser,
    ParseResult,
    ToolCallArgsDelta,
    ToolCallEnd,
    ToolCallStart,
    guess_parser,
    list_parsers,
    parser_info,
)

# Reads other formats' text; its markup is that of the format it picks (see `markup_name`).
AUTO = "auto"


def conformance_name(parser: str) -> str:
    """The conformance file (and markup) `parser` shares: its format's name (an alias's target);
    a name not registered (yet) is its own."""
    return parser_info(parser).format if parser in list_parsers() else parser


def markup_name(parser: str, text: str) -> str:
    """The format whose markup `parser` may consume from `text` (for `auto`, the one it picks)."""
    if parser == AUTO:
        return conformance_name(guess_parser(text) or "hermes")
    return conformance_name(parser)


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
    """The parsers' streaming invariants for one run."""
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


@dataclass(frozen=True)
class Markup:
    """What a format may consume as its own markup (the only text allowed to vanish).

    - `tokens`: markers and keywords; `(pattern, replacement)` regexes applied, in order, to the
      output *and* to content (so a marker kept as content cancels out), e.g. the wrapper keys
      `"name"`/`"arguments"`, or `<function=NAME>` -> `NAME` (the name must still be accounted for);
    - `per_call`: punctuation each call may use up (the `{`, `:`, `,`, quotes of a JSON wrapper);
    - `syntax`: characters never checked (Python-literal punctuation, converted away);
    - `ids`: the call id is the text's call header (kimi_k2's `functions.NAME:IDX`), credited
      instead of the name.
    """

    tokens: tuple[tuple[str, str], ...] = ()
    per_call: str = ""
    syntax: str = ""
    ids: bool = False


def _literal(*markers: str) -> tuple[tuple[str, str], ...]:
    return tuple((re.escape(m), "") for m in markers)


_JSON_CALL = _literal('"name"', '"arguments"', '"parameters"')
_JSON_PER_CALL = '{}::,,""[];'
# Keywords become JSON's true/false/null, exponents are written the JSON way (1e-07 -> 1e-7),
# and escapes are decoded (\u00e9 -> é): such text is credited to the call, not checked.
_PYTHON_LITERALS = (
    (r"\\(?:u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|x[0-9a-fA-F]{2}|N\{[^}]*\}|[0-7]{1,3})", ""),
    (r"\b(?:True|False|None)\b", ""),
    (r"(?<=[eE])\+", ""),
    (r"(?<=[eE]-)0+(?=\d)", ""),
    (r"(?<=[eE])0+(?=\d)", ""),
)
_PYTHON_SYNTAX = "[](){},:='\""


def format_markup(fmt: str) -> Markup:
    """The markup of format `fmt`, from its registry info: its markers in order (a marker ending
    in `=` opens a named tag, `<function=NAME>` -> `NAME`), then what its call syntax consumes."""
    info = parser_info(fmt)
    named = [m for m in info.markup if m.endswith("=")]
    tokens = _literal(*(m for m in info.markup if not m.endswith("=")))
    if named:
        tokens += ((f"(?:{'|'.join(map(re.escape, named))})([^>]*)>", r"\1"),)
    if info.call_syntax == "python_calls":
        return Markup(tokens + _PYTHON_LITERALS, syntax=_PYTHON_SYNTAX)
    if info.call_syntax == "json_object":
        tokens += _JSON_CALL
    return Markup(tokens, _JSON_PER_CALL, ids=info.call_ids)


# Keyed by conformance file name (aliases share their target's markup).
MARKUP: dict[str, Markup] = {
    conformance_name(n): format_markup(n) for n in list_parsers() if parser_info(n).call_syntax != "per_output"
}


def _strip_markup(s: str, markup: Markup) -> str:
    for pattern, repl in markup.tokens:
        s = re.sub(pattern, repl, s)
    return "".join(ch for ch in _nonws(s) if ch not in markup.syntax)


def _json_strings(args: str) -> str:
    """The decoded strings of JSON arguments: formats that convert raw values (XML parameters,
    Python literals) write e.g. a control character as `\\u0008`, which the text held raw."""
    try:
        value: Any = json.loads(args)
    except ValueError:
        return ""
    out: list[str] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, dict):
            out.extend(v)
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return "".join(out)


def lost_text(parser: str, text: str, result: ParseResult) -> Counter[str]:
    """The characters of `text` that reached neither content nor a call (empty: nothing lost).

    Every non-whitespace character of the output, once the format's markup is taken out, must
    be in content or in a call's name/arguments (as a multiset: a character counts once). Calls
    are credited generously (arguments converted from XML or Python literals hold more
    characters than the text did), content exactly.
    """
    markup = MARKUP[markup_name(parser, text)]
    missing = Counter(_strip_markup(text, markup))
    missing.subtract(Counter(_strip_markup(result.content or "", markup)))
    for call in result.tool_calls:
        header = call.id if markup.ids else call.name  # kimi_k2's id is the header holding the name
        credit = Counter(_nonws(header + call.arguments + markup.per_call))
        # Characters the arguments hold only escaped (`\u0008`) count as there, once.
        credit |= Counter(_nonws(_json_strings(call.arguments)))
        missing.subtract(credit)
    return +missing


def check_nothing_lost(parser: str, text: str, result: ParseResult, known_loss: bool = False) -> None:
    """The rule every parser keeps on every input (what is not in a call is in content):

    - content invents nothing: its non-whitespace characters are a subsequence of the text's;
    - every non-whitespace character of the text is in content, in a call, or in the format's
      own markup (`MARKUP`, see `lost_text`); with no call extracted, content has all of them.

    `known_loss`: the case is a recorded defect; it must still lose text (so that fixing it
    forces removing the record).
    """
    content = _nonws(result.content or "")
    source = iter(_nonws(text))
    assert all(ch in source for ch in content), "content has text that is not in the output, or reordered"
    if not result.tool_calls:
        assert content == _nonws(text), "no call extracted, but some text is missing from content"
    lost = lost_text(parser, text, result)
    if known_loss:
        assert lost, f"{parser}: no text lost any more: remove the case from KNOWN_TEXT_LOSS"
    else:
        assert not lost, f"{parser}: text lost (neither in content nor in a call): {dict(lost)!r}"


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
