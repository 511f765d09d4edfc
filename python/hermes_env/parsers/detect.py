"""Pick a tool-call parser name from a Hugging Face tokenizer or a chat-template string.

Each model family announces its tool-call syntax in two places: the chat template (which
renders earlier tool calls back into the prompt, and often describes the syntax in the
system prompt) and the tokenizer's added vocabulary (the marker tokens themselves).
``detect_parser`` looks for each family's distinctive markers in both, most specific
family first, and returns the first registered parser whose markers are present.

The order matters because families share markers: Qwen3-Coder and GLM-4.5 templates also
contain ``<tool_call>`` (so ``<function=`` / ``<arg_key>`` are checked before the Hermes
``<tool_call>``), and every DeepSeek version uses the same section tokens (V3 writes
``function<｜tool▁sep｜>NAME`` and a fenced ```` ```json ```` block, V3.1 and later write
``NAME<｜tool▁sep｜>{json}``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["detect_parser"]


@dataclass(frozen=True)
class _Signals:
    """What a tokenizer (or bare template) tells about its tool-call syntax."""

    template: str
    tokens: frozenset[str]

    def has(self, marker: str) -> bool:
        """``marker`` is an added/special token or appears in the chat template."""
        return marker in self.tokens or marker in self.template

    def any(self, markers: Iterable[str]) -> bool:
        return any(self.has(m) for m in markers)


@dataclass(frozen=True)
class _Rule:
    parser: str
    looks_for: str  # human description used in the error message
    test: Callable[[_Signals], bool]


_DS_SEP = "<｜tool▁sep｜>"
_DS_BEGIN = "<｜tool▁calls▁begin｜>"


def _deepseek_v3(s: _Signals) -> bool:
    if not s.has(_DS_BEGIN):
        return False
    if s.template:
        # V3's template renders `type<｜tool▁sep｜>name` followed by a ```json fence.
        return "```json" in s.template or "function<｜tool▁sep｜>" in s.template
    # Tokens only: V3.1+ vocabularies add <think>/</think> (hybrid thinking) and V3.2 adds DSML.
    return not (s.tokens & {"<think>", "</think>", "｜DSML｜"})


def _deepseek_v31(s: _Signals) -> bool:
    return s.has(_DS_BEGIN) and s.has(_DS_SEP)


def _llama_json(s: _Signals) -> bool:
    # Llama 3.1/3.2 templates describe a bare JSON object with "parameters"; <|python_tag|>
    # opens built-in tool calls and <|eom_id|> ends them.
    return s.has("<|python_tag|>") or (
        "<|start_header_id|>" in s.template and '"parameters"' in s.template and "<|eot_id|>" in s.template
    )


def _pythonic(s: _Signals) -> bool:
    # vLLM's pythonic example templates describe "[func_name1(params_name1=params_value1, ...)]".
    return "[func_name1(" in s.template or "func_name(param1=" in s.template


def _xlam(s: _Signals) -> bool:
    # xLAM templates ask for a JSON array of {"name", "arguments"} objects in a "tool_calls" list.
    t = s.template
    return '[{"name": "func_name1"' in t or ('"tool_calls"' in t and "func_name1" in t) or "xLAM" in t


_RULES: tuple[_Rule, ...] = (
    _Rule("kimi_k2", "<|tool_calls_section_begin|> (Kimi K2)", lambda s: s.has("<|tool_calls_section_begin|>")),
    _Rule("deepseek_v3", f"{_DS_BEGIN} with function{_DS_SEP} / ```json (DeepSeek-V3)", _deepseek_v3),
    _Rule("deepseek_v31", f"{_DS_BEGIN} with NAME{_DS_SEP} (DeepSeek-V3.1+)", _deepseek_v31),
    _Rule("mistral", "[TOOL_CALLS] (Mistral)", lambda s: s.has("[TOOL_CALLS]") and not _xlam(s)),
    _Rule(
        "internlm",
        "<|action_start|><|plugin|> (InternLM2)",
        lambda s: s.has("<|action_start|>") and s.has("<|plugin|>"),
    ),
    _Rule("longcat", "<longcat_tool_call> (LongCat)", lambda s: s.has("<longcat_tool_call>")),
    _Rule("jamba", "<tool_calls> (Jamba)", lambda s: s.has("<tool_calls>")),
    _Rule(
        "granite",
        "<|tool_call|> or <tool_call> in a <|start_of_role|> template (Granite)",
        lambda s: s.has("<|tool_call|>") or ("<|start_of_role|>" in s.template and "<tool_call>" in s.template),
    ),
    _Rule(
        "qwen3_coder",
        "<function= inside <tool_call> (Qwen3-Coder XML)",
        lambda s: s.has("<function=") and s.has("<tool_call>"),
    ),
    # GLM-4.5 and 4.7 differ only in spacing, which the one glm45 parser accepts.
    _Rule("glm45", "<arg_key>/<arg_value> (GLM-4.5 / 4.7)", lambda s: s.has("<arg_key>")),
    _Rule("xlam", 'a JSON array [{"name": "func_name1", "arguments": ...}] (xLAM)', _xlam),
    _Rule(
        "llama4_pythonic",
        "<|python_start|> / <|header_start|> (Llama 4)",
        lambda s: s.any(("<|python_start|>", "<|header_start|>")),
    ),
    _Rule("llama3_json", '<|python_tag|> or a Llama-3 template asking for "parameters" (Llama 3.x JSON)', _llama_json),
    _Rule("pythonic", "[func_name1(params_name1=...)] (pythonic list)", _pythonic),
    _Rule("hermes", "<tool_call> (Hermes / Qwen)", lambda s: s.has("<tool_call>")),
)


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
    from hermes_env.parsers import list_parsers  # late: hermes_env.parsers re-exports this function

    registered = set(list_parsers())
    signals = _signals(tokenizer_or_chat_template)
    unregistered: list[str] = []
    for rule in _RULES:
        if rule.test(signals):
            if rule.parser in registered:
                return rule.parser
            unregistered.append(rule.parser)
    looked_for = "; ".join(f"{r.parser}: {r.looks_for}" for r in _RULES)
    where = "chat template and added tokens" if signals.tokens else "chat template"
    if unregistered:
        raise ValueError(
            f"the {where} match parser(s) {unregistered} that are not registered in this build; "
            f"pass a parser name to get_parser() explicitly (available: {sorted(registered)})"
        )
    empty = " (the tokenizer has no chat template)" if not signals.template else ""
    raise ValueError(
        f"no tool-call format recognised in the {where}{empty}; looked for — {looked_for}. "
        "Pass a parser name to get_parser() explicitly."
    )
