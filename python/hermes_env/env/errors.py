"""Deprecated: everything here moved to :mod:`hermes_env.errors` (the exceptions, the kinds, classifying a failed call).

Importing this module warns once; it goes in the next release.
"""

from __future__ import annotations

from hermes_env._lazy import warn_moved
from hermes_env.errors import (
    ROLLOUT_FAILURE_KINDS,
    EnvSetupError,
    PolicyCallError,
    RolloutFailed,
    RolloutFailureKind,
    classify_policy_error,
    describe_error,
    unwrap_retries,
)

__all__ = [
    "ROLLOUT_FAILURE_KINDS",
    "EnvSetupError",
    "PolicyCallError",
    "RolloutFailed",
    "RolloutFailureKind",
    "classify_policy_error",
    "describe_error",
    "unwrap_retries",
]

warn_moved(__name__, "hermes_env.errors")
