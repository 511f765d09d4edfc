"""Execution backends: where a rollout's tools run (a local directory, bubblewrap, a sandbox pool)."""

from hermes_env.backends.base import ExecResult, ExecutionBackend

__all__ = ["ExecResult", "ExecutionBackend"]
