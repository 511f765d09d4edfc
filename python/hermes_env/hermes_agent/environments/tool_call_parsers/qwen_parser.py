"""``QwenToolCallParser`` of hermes-agent, parsed by hermes_env's ``qwen`` parser.

The format: the Hermes format under the name qwen.
"""

from __future__ import annotations

from hermes_env.hermes_agent.environments.tool_call_parsers._registry import register_parser
from hermes_env.hermes_agent.environments.tool_call_parsers.hermes_parser import HermesToolCallParser

__all__ = ["QwenToolCallParser"]


@register_parser("qwen")
class QwenToolCallParser(HermesToolCallParser):
    parser_name = "qwen"
