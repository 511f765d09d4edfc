"""``Qwen3CoderToolCallParser`` of hermes-agent, parsed by hermes_env's ``qwen3_coder`` parser.

The format: Qwen3-Coder `<function=name>` with `<parameter=key>` values.
"""

from __future__ import annotations

from hermes_env.hermes_agent.environments.tool_call_parsers._registry import CoreToolCallParser, register_parser

__all__ = ["Qwen3CoderToolCallParser"]


@register_parser("qwen3_coder")
class Qwen3CoderToolCallParser(CoreToolCallParser):
    parser_name = "qwen3_coder"
