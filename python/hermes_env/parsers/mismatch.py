"""A configured tool-call parser that does not match the model's output.

``--env.tool_call_parser mistral`` on a Qwen3 model parses nothing: every ``<tool_call>`` block
stays text in the answer, the rollout scores as if the model never called a tool, and nothing
says why. ``parser_mismatch`` notices it: when a parse found no call but the output carries
another format's markers (``guess_parser``, the knowledge ``auto`` uses) and that format does
parse calls from it, it returns a ``parser_mismatch`` issue naming both, and logs a warning once
per process for each (parser, format) pair.
"""

from __future__ import annotations

import logging

from hermes_env._core import ParseIssue, ParseResult, get_parser, guess_parser

__all__ = ["parser_mismatch"]

logger = logging.getLogger(__name__)

_warned: set[tuple[str, str]] = set()


def parser_mismatch(parser_name: str, text: str, result: ParseResult) -> ParseIssue | None:
    """The ``parser_mismatch`` issue for ``result`` (what parser ``parser_name`` made of
    ``text``), or ``None`` when it found calls, the output names no known format, or that
    format finds no call in it either (then the output is just text)."""
    if result.tool_calls or parser_name == "auto":
        return None
    looks_like = guess_parser(text)
    if looks_like is None:
        return None
    calls = get_parser(looks_like).parse(text).tool_calls
    if not calls:
        return None
    message = (
        f"tool_call_parser={parser_name!r} found no tool call, but the output is in the {looks_like!r} "
        f"format ({len(calls)} call(s) parse that way); set tool_call_parser to {looks_like!r} "
        "(or 'auto' to pick it from each output)"
    )
    if (parser_name, looks_like) not in _warned:
        _warned.add((parser_name, looks_like))
        logger.warning("%s (warned once per process)", message)
    return ParseIssue("parser_mismatch", 0, 0, message)
