"""``MistralToolCallParser`` of hermes-agent, parsed by hermes_env's ``mistral`` parser.

The format: `[TOOL_CALLS]` followed by a JSON list, or by `name{...}` / `name[ARGS]{...}` per call.
"""

from __future__ import annotations

from hermes_env.hermes_agent.environments.tool_call_parsers._registry import CoreToolCallParser, register_parser

__all__ = ["MistralToolCallParser"]


@register_parser("mistral")
class MistralToolCallParser(CoreToolCallParser):
    parser_name = "mistral"
