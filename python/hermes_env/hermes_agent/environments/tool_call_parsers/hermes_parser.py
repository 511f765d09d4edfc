"""``HermesToolCallParser`` of hermes-agent, parsed by hermes_env's ``hermes`` parser.

The format: `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`.
"""

from __future__ import annotations

from hermes_env.hermes_agent.environments.tool_call_parsers._registry import CoreToolCallParser, register_parser

__all__ = ["HermesToolCallParser"]


@register_parser("hermes")
class HermesToolCallParser(CoreToolCallParser):
    parser_name = "hermes"
