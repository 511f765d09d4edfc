"""Execution backends: where a rollout's tools run (a local directory, bubblewrap, the sandbox slot pool)."""

from hermes_env.backends.base import ExecResult, ExecutionBackend
from hermes_env.backends.registry import backend_names, get_backend, register_backend
from hermes_env.errors import BackendUnavailableError, WorkspacePathError

__all__ = [
    "BackendUnavailableError",
    "ExecResult",
    "ExecutionBackend",
    "WorkspacePathError",
    "backend_names",
    "get_backend",
    "register_backend",
]
