"""hermes-agent's ``atropos.backends.base``: ``ToolBackend`` is hermes_env's execution backend interface."""

from hermes_env.backends.base import ExecResult, ExecutionBackend

# Upstream's name for a backend of sandboxed tool execution.
ToolBackend = ExecutionBackend

__all__ = ["ExecResult", "ToolBackend"]
