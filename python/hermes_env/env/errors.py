"""Errors of the environment framework that callers may want to catch."""

from __future__ import annotations


class EnvSetupError(RuntimeError):
    """The run cannot start: the backend is unusable or the inference server does not answer."""


class RolloutFailed(RuntimeError):
    """A rollout that produced no usable trajectory; its whole group is dropped."""
