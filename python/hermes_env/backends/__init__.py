"""Execution backends: where a rollout's tools run (a local directory, bubblewrap, the sandbox slot pool)."""

from hermes_env._renamed import old_names
from hermes_env.backends.base import ExecResult, ExecutionBackend
from hermes_env.backends.registry import backend_names, get_backend, register_backend

__all__ = [
    "ExecResult",
    "ExecutionBackend",
    "backend_names",
    "get_backend",
    "register_backend",
]


# Exceptions live in hermes_env.errors; the names this package once re-exported still work for a release
# (hermes_env._renamed.OLD_NAMES), each with a warning once.
__getattr__ = old_names(__name__)
