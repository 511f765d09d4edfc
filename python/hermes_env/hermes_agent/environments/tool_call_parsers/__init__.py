"""hermes-agent's ``environments.tool_call_parsers``: its parser registry and classes over hermes_env's parsers.

```python
from hermes_env.hermes_agent.environments.tool_call_parsers import get_parser

parser = get_parser("hermes")
content, tool_calls = parser.parse(raw_model_output)
# content: the text without the tool-call markup, None when the output was only calls
# tool_calls: a list of openai ChatCompletionMessageToolCall, None when there are none
```

Upstream's names, classes (``HermesToolCallParser``, ``MistralToolCallParser``, ...), ``ParseResult`` tuple,
``PARSER_REGISTRY``, ``register_parser``, ``get_parser`` (``KeyError`` for an unknown name) and ``list_parsers``
are kept; the parsing itself is hermes_env's (``hermes_env.parsers``, in Rust), so a ported environment parses
exactly as hermes_env's own Phase 2 does. Every hermes_env parser name is registered too (``pythonic``,
``granite``, ``auto``, ...). A parser class registered by the caller with ``register_parser`` is used as written.

Where hermes_env's parsers answer differently from upstream's on purpose (README, "Tool-call parsers"):
a call whose JSON is broken or cut off is kept as a call with its raw text as arguments (upstream returns the
whole output as content and no calls), and a Hermes block without an ``arguments`` key is content, as in vLLM
(upstream makes it a call with ``{}``); text after the calls is kept in ``content`` (upstream drops it); Mistral
v11 output (``[TOOL_CALLS]name[ARGS]{...}``) gives the name without ``[ARGS]``. What a parse found wrong is
logged (debug) and is available as ``parser.parse_result(text).issues``.
"""

from __future__ import annotations

from hermes_env import parsers as _parsers
from hermes_env.hermes_agent.environments.tool_call_parsers._registry import (
    PARSER_REGISTRY,
    CoreToolCallParser,
    ParseResult,
    ToolCallParser,
    get_parser,
    list_parsers,
    parser_name,
    register_parser,
)

__all__ = [
    "PARSER_REGISTRY",
    "CoreToolCallParser",
    "ParseResult",
    "ToolCallParser",
    "get_parser",
    "list_parsers",
    "parser_name",
    "register_parser",
]

# Upstream's parser modules: importing them registers upstream's names and classes.
from hermes_env.hermes_agent.environments.tool_call_parsers.deepseek_v3_1_parser import (  # noqa: E402
    DeepSeekV31ToolCallParser,
)
from hermes_env.hermes_agent.environments.tool_call_parsers.deepseek_v3_parser import (  # noqa: E402
    DeepSeekV3ToolCallParser,
)
from hermes_env.hermes_agent.environments.tool_call_parsers.glm45_parser import Glm45ToolCallParser  # noqa: E402
from hermes_env.hermes_agent.environments.tool_call_parsers.glm47_parser import Glm47ToolCallParser  # noqa: E402
from hermes_env.hermes_agent.environments.tool_call_parsers.hermes_parser import HermesToolCallParser  # noqa: E402
from hermes_env.hermes_agent.environments.tool_call_parsers.kimi_k2_parser import KimiK2ToolCallParser  # noqa: E402
from hermes_env.hermes_agent.environments.tool_call_parsers.llama_parser import LlamaToolCallParser  # noqa: E402
from hermes_env.hermes_agent.environments.tool_call_parsers.longcat_parser import LongcatToolCallParser  # noqa: E402
from hermes_env.hermes_agent.environments.tool_call_parsers.mistral_parser import MistralToolCallParser  # noqa: E402
from hermes_env.hermes_agent.environments.tool_call_parsers.qwen3_coder_parser import (  # noqa: E402
    Qwen3CoderToolCallParser,
)
from hermes_env.hermes_agent.environments.tool_call_parsers.qwen_parser import QwenToolCallParser  # noqa: E402


def _register_other_formats() -> None:
    """hermes_env parser names upstream has no class for, each under a class of its own."""
    for name in _parsers.list_parsers():
        if name not in PARSER_REGISTRY:
            title = "".join(part.capitalize() for part in name.split("_"))
            cls = type(f"{title}ToolCallParser", (CoreToolCallParser,), {"parser_name": name, "__module__": __name__})
            PARSER_REGISTRY[name] = cls


_register_other_formats()

__all__ += [
    "DeepSeekV31ToolCallParser",
    "DeepSeekV3ToolCallParser",
    "Glm45ToolCallParser",
    "Glm47ToolCallParser",
    "HermesToolCallParser",
    "KimiK2ToolCallParser",
    "LlamaToolCallParser",
    "LongcatToolCallParser",
    "MistralToolCallParser",
    "Qwen3CoderToolCallParser",
    "QwenToolCallParser",
]
