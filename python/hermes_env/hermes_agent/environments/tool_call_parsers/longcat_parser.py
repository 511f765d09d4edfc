"""``LongcatToolCallParser`` of hermes-agent, parsed by hermes_env's ``longcat`` parser.

The format: `<longcat_tool_call>` JSON blocks.
"""

from __future__ import annotations

from hermes_env.hermes_agent.environments.tool_call_parsers._registry import CoreToolCallParser, register_parser

__all__ = ["LongcatToolCallParser"]


@register_parser("longcat")
class LongcatToolCallParser(CoreToolCallParser):
    parser_name = "longcat"
