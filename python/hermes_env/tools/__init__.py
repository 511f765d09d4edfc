"""Tools for the model: a registry with JSON schemas, toolsets and toolset distributions.

Importing this package registers the built-in tools (terminal, read_file, write_file, patch,
search_files, todo) in :data:`REGISTRY`.
"""

from hermes_env.tools import builtin as _builtin  # noqa: F401 - registers the built-in tools
from hermes_env.tools.distributions import DISTRIBUTIONS, register_distribution, sample_toolsets
from hermes_env.tools.registry import (
    REGISTRY,
    Tool,
    ToolArgumentError,
    ToolCallError,
    ToolRegistry,
    ToolRunContext,
)
from hermes_env.tools.toolsets import TOOLSETS, available_toolsets, resolve_toolsets

__all__ = [
    "DISTRIBUTIONS",
    "REGISTRY",
    "TOOLSETS",
    "Tool",
    "ToolArgumentError",
    "ToolCallError",
    "ToolRegistry",
    "ToolRunContext",
    "available_toolsets",
    "register_distribution",
    "resolve_toolsets",
    "sample_toolsets",
]
