"""Why a rollout failed: classifying a failed model call (the classes and kinds are in ``hermes_env.errors``).

A *failed rollout* never reaches the trainer: its whole group is dropped, logged once at
WARNING with the cause, and counted by cause (summary table, wandb ``train/groups_dropped/<kind>``).
``RolloutFailureKind`` names every cause; the agent loop records policy-call failures with the
same names (``AgentResult.failure``).
"""

from __future__ import annotations

import asyncio
import json

from hermes_env.errors import (
    ROLLOUT_FAILURE_KINDS,
    EnvSetupError,
    PolicyCallError,
    RolloutFailed,
    RolloutFailureKind,
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


def unwrap_retries(err: BaseException) -> BaseException:
    """The last attempt's error of a tenacity ``RetryError`` (atroposlib retries every server call)."""
    for _ in range(8):  # nested retries are possible; never loop forever on a cycle
        attempt = getattr(err, "last_attempt", None)
        inner = attempt.exception() if attempt is not None and hasattr(attempt, "exception") else None
        if not isinstance(inner, BaseException):
            return err
        err = inner
    return err


def describe_error(err: BaseException) -> str:
    """``Type: message`` of a failed call, looking through atroposlib's tenacity retries."""
    inner = unwrap_retries(err)
    text = str(inner).strip()
    if isinstance(inner, PolicyCallError):  # already says what failed
        return text
    described = f"{type(inner).__name__}: {text}" if text else type(inner).__name__
    attempt = getattr(err, "last_attempt", None)
    if inner is not err and attempt is not None:
        described += f" (after {getattr(attempt, 'attempt_number', '?')} attempts)"
    return described


def classify_policy_error(err: BaseException) -> RolloutFailureKind:
    """Which ``policy_*`` kind a failed model call is (or ``trajectory_divergence``)."""
    import aiohttp
    import openai

    from hermes_env.trajectory import TrajectoryDivergence

    err = unwrap_retries(err)
    if isinstance(err, PolicyCallError):
        return err.kind
    if isinstance(err, TrajectoryDivergence):
        return "trajectory_divergence"
    # Timeouts first: openai's APITimeoutError is an APIConnectionError, aiohttp's ServerTimeoutError a ClientError.
    if isinstance(err, TimeoutError | asyncio.TimeoutError | openai.APITimeoutError):
        return "policy_timeout"
    # ContentTypeError (a body that is not JSON) is a ClientResponseError: check it before the status errors.
    if isinstance(
        err,
        aiohttp.ContentTypeError
        | aiohttp.ClientPayloadError
        | json.JSONDecodeError
        | openai.APIResponseValidationError,
    ):
        return "policy_bad_response"
    if isinstance(err, aiohttp.ClientResponseError | openai.APIStatusError):
        return "policy_http_error"
    if isinstance(err, aiohttp.ClientConnectionError | ConnectionError | openai.APIConnectionError):
        return "policy_connection_error"
    return "policy_error"
