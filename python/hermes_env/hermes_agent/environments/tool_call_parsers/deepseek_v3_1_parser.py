"""``DeepSeekV31ToolCallParser`` of hermes-agent, parsed by hermes_env's ``deepseek_v3_1`` parser.

The format: DeepSeek V3.1's `<｜tool▁call▁begin｜>name<｜tool▁sep｜>{...}`.
"""

from __future__ import annotations

from hermes_env.hermes_agent.environments.tool_call_parsers._registry import CoreToolCallParser, register_parser

__all__ = ["DeepSeekV31ToolCallParser"]


@register_parser("deepseek_v3_1")
@register_parser("deepseek_v31")
class DeepSeekV31ToolCallParser(CoreToolCallParser):
    parser_name = "deepseek_v3_1"
