"""Execution backends: where a rollout's tools run (a local directory, bubblewrap, a sandbox pool)."""

from hermes_env.backends.base import ExecResult, ExecutionBackend
from hermes_env.backends.paths import WorkspacePathError
from hermes_env.backends.registry import backend_names, get_backend, register_backend

__all__ = [
    "ExecResult",
    "ExecutionBackend",
    "WorkspacePathError",
    "backend_names",
    "get_backend",
    "register_backend",
]
