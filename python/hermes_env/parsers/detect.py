"""Pick a tool-call parser name from a Hugging Face tokenizer or a chat-template string.

Each model family announces its tool-call syntax in two places: the chat template (which
renders earlier tool calls back into the prompt, and often describes the syntax in the
system prompt) and the tokenizer's added vocabulary (the marker tokens themselves).
``detect_parser`` looks for each format's distinctive markers in both, most specific format
first, and returns the first whose markers are present. The markers and the order come from
the parser registry (``parser_info(name).detection``, written next to each format in Rust).

The order matters because formats share markers: Qwen3-Coder and GLM-4.5 templates also
contain ``<tool_call>`` (so ``<function=`` / ``<arg_key>`` are checked before the Hermes
``<tool_call>``). What strings alone cannot decide is code here: every DeepSeek version uses
the same section tokens (V3 writes ``function<｜tool▁sep｜>NAME`` and a fenced ```` ```json ````
block, V3.1 and later write ``NAME<｜tool▁sep｜>{json}``), and xLAM templates may mention
Mistral's ``[TOOL_CALLS]``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hermes_env._core import Detection, list_parsers, parser_info

__all__ = ["detect_parser"]


@dataclass(frozen=True)
class _Signals:
    """What a tokenizer (or bare template) tells about its tool-call syntax."""

    template: str
    tokens: frozenset[str]

    def has(self, marker: str) -> bool:
        """``marker`` is an added/special token or appears in the chat template."""
        return marker in self.tokens or marker in self.template


@dataclass(frozen=True)
class _Rule:
    parser: str
    detection: Detection

    def matches(self, s: _Signals) -> bool:
        d = self.detection
        found = any(all(s.has(m) for m in ms) for ms in d.markers) or any(
            all(t in s.template for t in ts) for ts in d.template
        )
        refine = _REFINE.get(self.parser)
        return found and (refine is None or refine(s))


@functools.cache
def _rules() -> tuple[_Rule, ...]:
    """Every format's detection rule, in the order they are tried."""
    rules = []
    for name in list_parsers():
        info = parser_info(name)
        if info.format == name and info.detection is not None:
            rules.append(_Rule(name, info.detection))
    return tuple(sorted(rules, key=lambda r: r.detection.rank))


def _rule(parser: str) -> _Rule:
    return next(r for r in _rules() if r.parser == parser)


def _deepseek_v3_layout(s: _Signals) -> bool:
    """DeepSeek's section tokens are present: V3 rather than V3.1+?"""
    if s.template:
        # V3's template renders `type<｜tool▁sep｜>name` followed by a ```json fence.
        return "```json" in s.template or "function<｜tool▁sep｜>" in s.template
    # Tokens only: V3.1+ vocabularies add <think>/</think> (hybrid thinking) and V3.2 adds DSML.
    return not (s.tokens & {"<think>", "</think>", "｜DSML｜"})


# Conditions beyond a format's markers, where they do not decide alone.
_REFINE: dict[str, Callable[[_Signals], bool]] = {
    "deepseek_v3": _deepseek_v3_layout,
    "mistral": lambda s: not _rule("xlam").matches(s),
}


def _template_text(template: Any) -> str:
    if template is None:
        return ""
    if isinstance(template, str):
        return template
    if isinstance(template, Mapping):  # named templates ({"default": ..., "tool_use": ...})
        return "\n".join(v for v in template.values() if isinstance(v, str))
    if isinstance(template, list):  # tokenizer_config.json style [{"name": ..., "template": ...}]
        return "\n".join(t.get("template", "") for t in template if isinstance(t, Mapping))
    return ""


def _token_set(tokenizer: Any) -> frozenset[str]:
    tokens: set[str] = set()
    getter = getattr(tokenizer, "get_added_vocab", None)
    if callable(getter):
        try:
            tokens.update(getter())
        except Exception:  # noqa: BLE001 - a tokenizer without added vocab still has a template to read
            pass
    for attr in ("all_special_tokens", "additional_special_tokens"):
        value = getattr(tokenizer, attr, None)
        if isinstance(value, list | tuple):
            tokens.update(t for t in value if isinstance(t, str))
    return frozenset(tokens)


def _signals(tokenizer_or_chat_template: Any) -> _Signals:
    if isinstance(tokenizer_or_chat_template, str):
        return _Signals(tokenizer_or_chat_template, frozenset())
    if isinstance(tokenizer_or_chat_template, Mapping | list):
        return _Signals(_template_text(tokenizer_or_chat_template), frozenset())
    if not (
        hasattr(tokenizer_or_chat_template, "chat_template") or hasattr(tokenizer_or_chat_template, "get_added_vocab")
    ):
        raise TypeError(
            "detect_parser() takes a Hugging Face tokenizer (with chat_template / get_added_vocab) or a "
            f"chat-template string, not {type(tokenizer_or_chat_template).__name__}"
        )
    template = _template_text(getattr(tokenizer_or_chat_template, "chat_template", None))
    return _Signals(template, _token_set(tokenizer_or_chat_template))


def detect_parser(tokenizer_or_chat_template: Any) -> str:
    """Return the registered parser name matching a tokenizer's chat template and special tokens.

    ``tokenizer_or_chat_template`` is a Hugging Face tokenizer (its ``chat_template`` and its
    added / special tokens are inspected) or the chat-template text itself. Raises
    ``ValueError`` naming every marker looked for when none is present, and ``TypeError`` for
    anything that is neither a tokenizer nor a template.
    """
    signals = _signals(tokenizer_or_chat_template)
    for rule in _rules():
        if rule.matches(signals):
            return rule.parser
    looked_for = "; ".join(f"{r.parser}: {r.detection.looks_for}" for r in _rules())
    where = "chat template and added tokens" if signals.tokens else "chat template"
    empty = " (the tokenizer has no chat template)" if not signals.template else ""
    raise ValueError(
        f"no tool-call format recognised in the {where}{empty}; looked for — {looked_for}. "
        "Pass a parser name to get_parser() explicitly."
    )
