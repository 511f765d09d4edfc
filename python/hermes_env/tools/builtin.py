"""Registers the built-in tools in the default registry."""

from __future__ import annotations

from hermes_env.tools.code_execution_tool import ExecuteCodeTool
from hermes_env.tools.file_tools import PatchTool, ReadFileTool, SearchFilesTool, WriteFileTool
from hermes_env.tools.process_tool import ProcessTool
from hermes_env.tools.registry import REGISTRY, ToolRegistry
from hermes_env.tools.stateful_tools import TerminalStatefulTool, TmuxTool
from hermes_env.tools.terminal_tool import TerminalTool
from hermes_env.tools.todo_tool import TodoTool

BUILTIN_TOOLS = (
    TerminalTool,
    ProcessTool,
    ReadFileTool,
    WriteFileTool,
    PatchTool,
    SearchFilesTool,
    TodoTool,
    ExecuteCodeTool,
    TerminalStatefulTool,
    TmuxTool,
)


def register_builtin_tools(registry: ToolRegistry) -> None:
    for cls in BUILTIN_TOOLS:
        if cls.name not in registry:
            registry.register(cls())


register_builtin_tools(REGISTRY)
