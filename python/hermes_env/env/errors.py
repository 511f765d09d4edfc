"""Errors of the environment framework that callers may want to catch (defined in ``hermes_env.errors``)."""

from __future__ import annotations

from hermes_env.errors import EnvSetupError, RolloutFailed

__all__ = ["EnvSetupError", "RolloutFailed"]
