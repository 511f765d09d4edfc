"""``KimiK2ToolCallParser`` of hermes-agent, parsed by hermes_env's ``kimi_k2`` parser.

The format: Kimi K2 call sections; each call keeps its `functions.name:N` id.
"""

from __future__ import annotations

from hermes_env.hermes_agent.environments.tool_call_parsers._registry import CoreToolCallParser, register_parser

__all__ = ["KimiK2ToolCallParser"]


@register_parser("kimi_k2")
class KimiK2ToolCallParser(CoreToolCallParser):
    parser_name = "kimi_k2"
