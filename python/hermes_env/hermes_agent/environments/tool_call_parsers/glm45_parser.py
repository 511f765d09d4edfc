"""``Glm45ToolCallParser`` of hermes-agent, parsed by hermes_env's ``glm45`` parser.

The format: GLM 4.5 `<tool_call>name` with `<arg_key>`/`<arg_value>` pairs.
"""

from __future__ import annotations

from hermes_env.hermes_agent.environments.tool_call_parsers._registry import CoreToolCallParser, register_parser

__all__ = ["Glm45ToolCallParser"]


@register_parser("glm45")
class Glm45ToolCallParser(CoreToolCallParser):
    parser_name = "glm45"
