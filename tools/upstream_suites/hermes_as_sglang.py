"""SGLang's function-call detectors answered by hermes_env (a development check, not CI).

``install()`` replaces each SGLang detector class for a format hermes_env has, in its module
and in ``FunctionCallParser.ToolCallParserEnum``, by a subclass of SGLang's
``BaseFormatDetector`` whose ``detect_and_parse`` / ``parse_streaming_increment`` /
``has_tool_call`` call ``hermes_env.parsers``. Import this module before SGLang's test modules
(``python -c "import hermes_as_sglang; hermes_as_sglang.install()"`` in a runner, or
``-p hermes_as_sglang`` with pytest, which installs it at configure time), from an SGLang source
tree (``python/`` of the repository; the PyPI sdist has the package but not its tests).

What SGLang's API means, and how it is met here:
- ``StreamingParseResult(normal_text, calls)``; a call is ``ToolCallItem(tool_index, name,
  parameters)``. In ``detect_and_parse`` SGLang's ``tool_index`` is the tool's position in
  ``tools`` (-1 when unknown); while streaming it is the call's position in the output. The
  stand-in does the same.
- SGLang's streaming has no end-of-output call either: text hermes_env still holds when a test
  stops feeding (a possible marker prefix, whitespace that may be framing) is not returned.
- Tests that read a detector's private state (``_buffer``, ``current_tool_id``) cannot pass.
"""

from __future__ import annotations

import importlib
import json
from typing import Any

import hermes_env.parsers as hp

# SGLang detector (module, class) -> hermes_env parser name.
DETECTORS = {
    ("hermes_detector", "HermesDetector"): "hermes",
    ("qwen25_detector", "Qwen25Detector"): "hermes",
    ("qwen3_coder_detector", "Qwen3CoderDetector"): "qwen3_coder",
    ("glm4_moe_detector", "Glm4MoeDetector"): "glm45",
    ("glm47_moe_detector", "Glm47MoeDetector"): "glm47",
    ("kimik2_detector", "KimiK2Detector"): "kimi_k2",
    ("deepseekv3_detector", "DeepSeekV3Detector"): "deepseek_v3",
    ("deepseekv31_detector", "DeepSeekV31Detector"): "deepseek_v31",
    ("mistral_detector", "MistralDetector"): "mistral",
    # SGLang's pythonic detector also reads Llama 4's <|python_start|> wrapper.
    ("pythonic_detector", "PythonicDetector"): "llama4_pythonic",
    ("llama32_detector", "Llama32Detector"): "llama3_json",
    ("internlm_detector", "InternlmDetector"): "internlm",
}


def _tool_dicts(tools: Any) -> list[dict[str, Any]] | None:
    out = []
    for t in tools or []:
        if hasattr(t, "model_dump"):
            t = t.model_dump(exclude_none=True)
        if isinstance(t, dict) and isinstance(t.get("function"), dict):
            out.append(t)
    return out or None


def _tool_index(tools: Any, name: str) -> int:
    for i, t in enumerate(tools or []):
        function = getattr(t, "function", None) or (t.get("function") if isinstance(t, dict) else None)
        fname = getattr(function, "name", None) or (function.get("name") if isinstance(function, dict) else None)
        if fname == name:
            return i
    return -1


def make_detector(base: type, hermes_name: str, class_name: str) -> type:
    from sglang.srt.function_call.core_types import StreamingParseResult, ToolCallItem

    class Detector(base):  # type: ignore[misc, valid-type]
        """SGLang's detector interface over hermes_env's parser of the same format."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__()
            self._stream: Any = None
            self._tools_key: str | None = None

        def _parser(self, tools: Any) -> Any:
            return hp.get_parser(hermes_name, tools=_tool_dicts(tools))

        def has_tool_call(self, text: str) -> bool:
            return bool(self._parser(None).parse(text).tool_calls)

        def detect_and_parse(self, text: str, tools: Any) -> Any:
            r = self._parser(tools).parse(text)
            calls = [
                ToolCallItem(tool_index=_tool_index(tools, c.name), name=c.name, parameters=c.arguments)
                for c in r.tool_calls
            ]
            return StreamingParseResult(normal_text=r.content or "", calls=calls)

        def parse_streaming_increment(self, new_text: str, tools: Any) -> Any:
            key = json.dumps(_tool_dicts(tools), sort_keys=True, default=str)
            if self._stream is None or key != self._tools_key:
                self._stream = self._parser(tools).stream()
                self._tools_key = key
            events = self._stream.feed(new_text)
            text = "".join(e.text for e in events if isinstance(e, hp.ContentDelta))
            calls: list[Any] = []
            for e in events:
                if isinstance(e, hp.ToolCallStart):
                    calls.append(ToolCallItem(tool_index=e.index, name=e.name, parameters=""))
                elif isinstance(e, hp.ToolCallArgsDelta):
                    calls.append(ToolCallItem(tool_index=e.index, name=None, parameters=e.text))
            return StreamingParseResult(normal_text=text, calls=calls)

    Detector.__name__ = Detector.__qualname__ = class_name
    return Detector


def install() -> list[str]:
    from sglang.srt.function_call.base_format_detector import BaseFormatDetector
    from sglang.srt.function_call.function_call_parser import FunctionCallParser

    replaced = []
    stand_ins: dict[type, type] = {}
    for (module, cls), name in DETECTORS.items():
        mod = importlib.import_module(f"sglang.srt.function_call.{module}")
        original = getattr(mod, cls)
        # Structured-output settings (EBNF, structural tags) stay SGLang's: only parsing is replaced.
        kept = {
            attr: getattr(original, attr)
            for attr in ("supports_structural_tag", "structure_info", "build_ebnf")
            if hasattr(original, attr)
        }
        stand_in = type(cls, (make_detector(BaseFormatDetector, name, cls),), kept)
        setattr(mod, cls, stand_in)
        stand_ins[original] = stand_in
        replaced.append(f"{module}.{cls} -> {name}")
    enum = FunctionCallParser.ToolCallParserEnum
    for key, detector in list(enum.items()):
        if detector in stand_ins:
            enum[key] = stand_ins[detector]
    return replaced


def pytest_configure(config: Any) -> None:
    install()
