"""``DeepSeekV3ToolCallParser`` of hermes-agent, parsed by hermes_env's ``deepseek_v3`` parser.

The format: DeepSeek V3's `<｜tool▁call▁begin｜>function<｜tool▁sep｜>name` with a fenced JSON block.
"""

from __future__ import annotations

from hermes_env.hermes_agent.environments.tool_call_parsers._registry import CoreToolCallParser, register_parser

__all__ = ["DeepSeekV3ToolCallParser"]


@register_parser("deepseek_v3")
class DeepSeekV3ToolCallParser(CoreToolCallParser):
    parser_name = "deepseek_v3"
