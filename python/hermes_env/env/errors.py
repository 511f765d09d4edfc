"""Errors of the environment framework, and the one vocabulary of why a rollout failed.

A *failed rollout* never reaches the trainer: its whole group is dropped, logged once at
WARNING with the cause, and counted by cause (summary table, wandb ``train/groups_dropped/<kind>``).
``RolloutFailureKind`` names every cause; the agent loop records policy-call failures with the
same names (``AgentResult.failure``).
"""

from __future__ import annotations

import asyncio
import json
from typing import Literal, get_args

RolloutFailureKind = Literal[
    "policy_http_error",  # the inference server answered with an HTTP error status (500, 404, ...)
    "policy_bad_response",  # it answered, but not with a usable completion (not JSON, missing or impossible
    # token ids / logprobs, an aborted request)
    "policy_timeout",  # no answer within the rollout budget (rollout_timeout) or the request timeout
    "policy_connection_error",  # the connection could not be made or was dropped
    "policy_error",  # any other failure of the model call
    "trajectory_divergence",  # Phase 2: the re-rendered prompt changed earlier tokens (divergence_policy 'raise')
    "sandbox_failed",  # the tool backend itself failed mid-rollout (a worker died, a sandbox crashed)
    "workspace_setup_failed",  # setup_trajectory_workspace (e.g. a task's setup command) failed
    "rollout_lifetime",  # the rollout outlived terminal_lifetime
    "no_trajectory",  # Phase 2 recorded no trajectory for a rollout that produced output
    "rollout_error",  # an unexpected exception (a bug); logged with its traceback
]
ROLLOUT_FAILURE_KINDS: tuple[RolloutFailureKind, ...] = get_args(RolloutFailureKind)


class EnvSetupError(RuntimeError):
    """The run cannot start: the backend is unusable or the inference server does not answer."""


class RolloutFailed(RuntimeError):
    """A rollout that produced no usable trajectory; its whole group is dropped. ``kind`` says why."""

    def __init__(self, message: str, kind: RolloutFailureKind = "rollout_error") -> None:
        super().__init__(message)
        self.kind: RolloutFailureKind = kind


class PolicyCallError(RuntimeError):
    """A model call that gave no usable completion; ``kind`` is one of the ``policy_*`` failure kinds."""

    def __init__(self, kind: RolloutFailureKind, message: str) -> None:
        super().__init__(message)
        self.kind: RolloutFailureKind = kind


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
