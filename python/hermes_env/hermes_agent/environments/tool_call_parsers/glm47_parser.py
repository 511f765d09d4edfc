"""``Glm47ToolCallParser`` of hermes-agent, parsed by hermes_env's ``glm47`` parser.

The format: GLM 4.7: the GLM 4.5 format without the newlines.
"""

from __future__ import annotations

from hermes_env.hermes_agent.environments.tool_call_parsers._registry import register_parser
from hermes_env.hermes_agent.environments.tool_call_parsers.glm45_parser import Glm45ToolCallParser

__all__ = ["Glm47ToolCallParser"]


@register_parser("glm47")
class Glm47ToolCallParser(Glm45ToolCallParser):
    parser_name = "glm47"
