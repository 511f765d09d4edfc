"""Tools for the model, with hermes-agent's names, schemas and JSON results, grouped into toolsets.

Importing this package registers the built-in tools (``terminal``, ``process``, ``read_file``,
``write_file``, ``patch``, ``search_files``, ``todo``, ...) in :data:`REGISTRY`.
``get_tool_definitions(enabled_toolsets=..., disabled_toolsets=...)`` returns the OpenAI schemas
as hermes-agent's ``model_tools.get_tool_definitions`` does.
"""

from hermes_env._renamed import old_names
from hermes_env.tools import builtin as _builtin  # noqa: F401 - registers the built-in tools
from hermes_env.tools import registry as _registry
from hermes_env.tools.distributions import (
    DISTRIBUTIONS,
    get_distribution,
    list_distributions,
    register_distribution,
    sample_toolsets_from_distribution,
    validate_distribution,
)
from hermes_env.tools.registry import *  # noqa: F403 - its __all__ is part of this package's
from hermes_env.tools.toolsets import (
    TOOLSETS,
    Toolset,
    available_toolsets,
    create_custom_toolset,
    get_all_toolsets,
    get_tool_definitions,
    get_toolset,
    get_toolset_names,
    resolve_multiple_toolsets,
    resolve_toolset,
    resolve_toolsets,
    tools_for_toolsets,
    validate_toolset,
)

__all__ = [
    "DISTRIBUTIONS",
    "TOOLSETS",
    "Toolset",
    "available_toolsets",
    "create_custom_toolset",
    "get_all_toolsets",
    "get_distribution",
    "get_tool_definitions",
    "get_toolset",
    "get_toolset_names",
    "list_distributions",
    "register_distribution",
    "resolve_multiple_toolsets",
    "resolve_toolset",
    "resolve_toolsets",
    "sample_toolsets_from_distribution",
    "tools_for_toolsets",
    "validate_distribution",
    "validate_toolset",
]
__all__ += _registry.__all__  # Tool, ToolRegistry, REGISTRY, ToolCallContext, ToolOutput, the tool errors, error_json


# Exceptions live in hermes_env.errors and ToolRunContext is ToolCallContext; the old names still work for a
# release (hermes_env._renamed.OLD_NAMES), each with a warning once.
__getattr__ = old_names(__name__)
