"""``LlamaToolCallParser`` of hermes-agent, parsed by hermes_env's ``llama3_json`` parser.

The format: JSON objects with `name` and `arguments` or `parameters`, optionally after `<|python_tag|>`.
"""

from __future__ import annotations

from hermes_env.hermes_agent.environments.tool_call_parsers._registry import CoreToolCallParser, register_parser

__all__ = ["LlamaToolCallParser"]


@register_parser("llama3_json")
@register_parser("llama4_json")
class LlamaToolCallParser(CoreToolCallParser):
    parser_name = "llama3_json"
