"""Every exception hermes_env raises on purpose, and the one vocabulary of error kinds.

Exceptions (catch ``HermesEnvError`` for all of them; each also keeps the built-in base its
callers catch, e.g. ``WorkspacePathError`` is a ``PermissionError``)::

    HermesEnvError
    ├── EnvSetupError                 the run cannot start (backend unusable, server silent)
    │   ├── BackendUnavailableError   a sandbox/backend needs a program or kernel feature missing here
    │   └── InferenceServerUnreachable
    ├── ConfigError                   a dataset, phase or option that cannot be used as given
    │   ├── BackendOptionsError       a terminal_backend_options field the backend does not accept
    │   ├── DatasetError
    │   │   └── HarborTaskError       a Harbor task folder that cannot be read
    │   ├── PortError                 an upstream file that cannot be ported
    │   ├── ReplayFileError           a scripted policy's replay file that cannot be used
    │   ├── PhaseError
    │   ├── TokenizerUnavailable      also an OSError, as Hugging Face's own loading errors are
    │   ├── GGUFError                 a model file that is not a readable GGUF, or a tokenizer it cannot give
    │   ├── UnknownParserError        a tool-call parser name no parser has (``name``, ``available``)
    │   ├── ToolSchemaError           request tools that are not OpenAI tool schemas
    │   └── BpeConfigError            a tokenizer ByteLevelBpe does not reproduce
    ├── RolloutFailed                 one rollout produced nothing usable; its group is dropped (``kind``)
    ├── PolicyCallError               a model call gave no usable completion (``kind``: a policy_* kind)
    ├── BackendFailure                the tool backend failed under a call (worker died): fails the rollout
    ├── ToolCallError                 a tool call failed; the message is for the model
    │   └── ToolArgumentError
    ├── WorkspacePathError            a path that would leave the task's workspace
    ├── FileTooLargeError             a file over a read/write limit
    ├── SandboxPoolError              the slot pool could not serve a call
    │   ├── SlotAcquireTimeout
    │   ├── PoolClosedError
    │   └── WorkerStartError
    ├── ContainerError                a container engine, image or container failed
    │   ├── EngineUnavailableError    no engine answers (also a BackendUnavailableError)
    │   ├── EngineCommandError        one engine command failed
    │   ├── ImageBuildError           a task's image recipe failed to build
    │   │   └── UvUnavailableError    uv's wheel could not be fetched
    │   ├── ToolboxError              a verifier toolbox could not be provisioned
    │   ├── ImageUnavailableError     a named image is neither local nor pullable
    │   ├── ContainerLostError        a rollout's container could not start, died, or was out of memory
    │   │                             (also a BackendFailure)
    │   └── ChannelClosedError        a container's call channel closed under a call (the container ended)
    ├── GenerationRequestError        a generation request the GGUF engine/server refuses (HTTP 400)
    ├── TurnRewardError               turn rewards of the wrong count, or not finite numbers (a ValueError)
    ├── ParserUsageError              a parser call that cannot be served as made (a ValueError)
    │   └── RenderError               calls or content a parser cannot write
    │       └── RenderTypeError       tool calls that are not ToolCall objects or dicts (also a TypeError)
    ├── TrajectoryError               impossible trajectory input (a ValueError; ``index``)
    │   └── TrajectoryDivergence      a re-rendered prompt that does not extend the trajectory (``window``)
    ├── CoreStateError                a Rust object left unusable by an earlier panic (a RuntimeError)
    ├── TeacherError                  a distillation teacher did not answer usably: its group is dropped
    ├── JudgeError                    a judge's chat server did not answer usably
    └── LlamaDecodeError              llama.cpp's decode failed (``code``); fails the requests in that batch

The Rust core (``hermes_env._core``) raises the classes of the "Rust core" block below: the
extension imports them from this module the first time it raises one.

Error kinds are short snake_case strings recorded in results rather than raised: a parser's
``ParseIssue.kind``, the agent loop's ``ToolError.kind``, a backend's ``ExecResult.error_type``,
why a rollout failed (``RolloutFailed.kind``, ``AgentResult.failure``, wandb ``train/groups_dropped/<kind>``).
One name means one thing wherever it appears (``malformed_json`` is JSON that breaks the grammar,
whether the parser or the loop found it). The parser kinds are defined by the Rust core
(``hermes_env.parsers.ISSUE_KINDS``, checked against :data:`ParseIssueKind` by the tests).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, get_args


class HermesEnvError(Exception):
    """Base of every exception hermes_env raises on purpose."""


# -- setup ------------------------------------------------------------------------------------
class EnvSetupError(HermesEnvError, RuntimeError):
    """The run cannot start: the backend is unusable or the inference server does not answer."""


class BackendUnavailableError(EnvSetupError):
    """A backend or sandbox cannot run on this machine (missing program, kernel feature); the message says
    what to install or enable."""


class InferenceServerUnreachable(EnvSetupError):
    """No answer from an inference server named in the configuration."""


class ConfigError(HermesEnvError, ValueError):
    """Configuration or input that cannot be used as given; the message says what to change."""


class BackendOptionsError(ConfigError):
    """``terminal_backend_options`` that the named backend does not accept; the message names the field and
    lists the backend's valid options."""


class DatasetError(ConfigError):
    """A dataset that cannot be used as given (missing file, bad line, missing prompt field)."""


class PortError(ConfigError):
    """An upstream file that cannot be ported (not Python, or an import that cannot be resolved)."""


class ReplayFileError(ConfigError):
    """A replay file that cannot be used; the message names the file, the rule and the field."""


class HarborTaskError(DatasetError):
    """A Harbor task directory that cannot be read."""


class PhaseError(ConfigError):
    """A phase that the configured inference server cannot provide."""


class ToolsetUnavailableError(ConfigError):
    """A toolset whose tools cannot run here (they need the network, a human or a service)."""


class ToolServerError(EnvSetupError):
    """The tool server could not be reached or would not list its tools."""


class TokenizerUnavailable(ConfigError, OSError):
    """A tokenizer could not be found or loaded; the message says what to pass instead."""


# -- rollouts and tools -----------------------------------------------------------------------
#: Why a rollout failed; its whole group is dropped and counted under this name.
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
    "rollout_lifetime",  # the rollout's workspace sat idle longer than terminal_lifetime and was destroyed
    "no_trajectory",  # Phase 2 recorded no trajectory for a rollout that produced output
    "turn_rewards_invalid",  # compute_turn_rewards gave the wrong count or a value that is not a finite number
    "teacher_failed",  # distillation: the teacher (or its hint judge) did not answer usably
    "judge_failed",  # the reward judge (judge_reward) could not be asked
    "rollout_error",  # an unexpected exception (a bug); logged with its traceback
]
ROLLOUT_FAILURE_KINDS: tuple[RolloutFailureKind, ...] = get_args(RolloutFailureKind)


class RolloutFailed(HermesEnvError, RuntimeError):
    """A rollout that produced no usable trajectory; its whole group is dropped. ``kind`` says why."""

    def __init__(self, message: str, kind: RolloutFailureKind = "rollout_error") -> None:
        super().__init__(message)
        self.kind: RolloutFailureKind = kind


class PolicyCallError(HermesEnvError, RuntimeError):
    """A model call that gave no usable completion; ``kind`` is one of the ``policy_*`` failure kinds."""

    def __init__(self, kind: RolloutFailureKind, message: str) -> None:
        super().__init__(message)
        self.kind: RolloutFailureKind = kind


class BackendFailure(HermesEnvError, RuntimeError):
    """The backend failed under a tool call (worker died, sandbox crashed): the rollout's workspace is
    gone or unusable, so the rollout fails instead of telling the model its call went wrong."""


class TurnRewardError(HermesEnvError, ValueError):
    """Turn rewards that cannot be used: the wrong count, a value that is not a finite number."""


class TeacherError(HermesEnvError, RuntimeError):
    """The teacher did not answer, or answered with something unusable; the rollout's group is dropped."""


class JudgeError(HermesEnvError, RuntimeError):
    """The judge server did not answer usably (connection, HTTP status, shape)."""


class WorkspaceReaped(RolloutFailed, BackendFailure):
    """A rollout's workspace was destroyed because it sat idle longer than ``terminal_lifetime``.

    A :class:`BackendFailure` too, so a tool call that meets the destroyed workspace fails its rollout.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message, "rollout_lifetime")


# Which kind a failed model call is: the agent loop (both phases) and the managed server's reply checks
# classify with these, so they sit with the kinds rather than above either.
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
    import asyncio
    import json

    import aiohttp
    import openai

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


class ToolCallError(HermesEnvError):
    """A tool call failed; the message is written for the model to read."""


class ToolArgumentError(ToolCallError, ValueError):
    """The call's arguments do not match the tool's schema."""


# -- workspaces and sandboxes -----------------------------------------------------------------
class WorkspacePathError(HermesEnvError, PermissionError):
    """A path that would leave the task's workspace."""


class FileTooLargeError(HermesEnvError, OSError):
    """A file over the backend's read or write limit."""


class SandboxPoolError(HermesEnvError):
    """The sandbox slot pool could not serve a call."""


class SlotAcquireTimeout(SandboxPoolError, TimeoutError):
    """No slot became free in time."""


class PoolClosedError(SandboxPoolError, RuntimeError):
    """The pool was closed."""


class WorkerStartError(SandboxPoolError, RuntimeError):
    """A sandbox server could not be started (the message says why and what to do)."""


class GGUFError(ConfigError):
    """A model file that is not a readable GGUF file, or whose tokenizer hermes_env cannot build."""


class GenerationRequestError(HermesEnvError, ValueError):
    """A generation request the GGUF engine or its server cannot serve as asked (the server answers 400)."""


class LlamaDecodeError(HermesEnvError, RuntimeError):
    """llama_decode failed; ``code`` is its return value (1: no room in the KV cache)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


# -- containers -------------------------------------------------------------------------------
class ContainerError(HermesEnvError, RuntimeError):
    """A container operation failed; the message says what and what to do."""


class EngineUnavailableError(ContainerError, BackendUnavailableError):
    """No usable container engine (not installed, or its daemon is unreachable)."""


class EngineCommandError(ContainerError):
    """One engine command failed (its output is in the message)."""

    def __init__(self, message: str, *, returncode: int | None = None, output: str = "") -> None:
        super().__init__(message)
        self.returncode = returncode
        self.output = output


class ImageBuildError(ContainerError):
    """A task image could not be built (the message has the end of the build log and where the whole log is)."""


class UvUnavailableError(ImageBuildError):
    """uv's wheel could not be fetched from PyPI."""


class ToolboxError(ContainerError):
    """What a task's test.sh needs could not be provisioned into its verifier toolbox."""


class ImageUnavailableError(ContainerError):
    """An image named by a task is not present and could not be pulled."""


class ContainerLostError(ContainerError, BackendFailure):
    """The rollout's container could not be started, died, or a command in it was killed for memory: the
    rollout fails (its group is dropped), not the run."""


class ChannelClosedError(ContainerError, ConnectionError):
    """A container's call channel closed (its main process ended): the backend turns it into ContainerLostError."""


# -- the Rust core (hermes_env._core) -----------------------------------------------------------
# Raised by the compiled extension itself: its `import_exception!` imports each class from here
# the first time it raises one, so this module must never import hermes_env._core (nor anything
# that does). Each keeps the built-in base the extension raised before (ValueError, TypeError,
# RuntimeError), so `except ValueError` around a parser or trajectory call still catches it.
class UnknownParserError(ConfigError):
    """A tool-call parser name that no parser has; the message lists ``available`` (vLLM's names)."""

    def __init__(self, message: str, name: str = "", available: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.name = name
        self.available: tuple[str, ...] = tuple(available)


class ToolSchemaError(ConfigError):
    """Request tools that are not OpenAI tool schemas (or not JSON); the message names the tool and field."""


class BpeConfigError(ConfigError):
    """A tokenizer that ByteLevelBpe does not reproduce (the message says which part), or an ``ints`` table
    that is not the ints 0..n: encode with the tokenizer itself instead."""


class ParserUsageError(HermesEnvError, ValueError):
    """A parser call that cannot be served as made (``feed()`` after ``finish()``, an unknown issue kind).
    Model output never raises: what a parser cannot read is content with a ``ParseIssue``."""


class RenderError(ParserUsageError):
    """Calls or content that a parser cannot write in its format (the message says what and why)."""


class RenderTypeError(RenderError, TypeError):
    """Tool calls given to ``Parser.render`` that are not ToolCall objects or dicts of the right shape."""


class TrajectoryError(HermesEnvError, ValueError):
    """Impossible trajectory input (a negative or out-of-vocabulary id, a logprob that is not a finite number
    <= 0, an unknown finish reason, a completion before any prompt...). Nothing was changed. ``index`` is the
    offending position, or None."""

    def __init__(self, message: str, index: int | None = None) -> None:
        super().__init__(message)
        self.index = index


class TrajectoryDivergence(TrajectoryError):
    """A re-rendered prompt does not start with the trajectory's tokens. ``index`` is the first differing
    position; ``window`` holds both sides around it (ids, and text when a decoder was given)."""

    def __init__(self, message: str, index: int | None = None, window: dict[str, Any] | None = None) -> None:
        super().__init__(message, index)
        self.window: dict[str, Any] = window if window is not None else {}


class CoreStateError(HermesEnvError, RuntimeError):
    """A Rust object (a ``ParseStream``, a ``ByteLevelBpe``) left unusable by an earlier panic; make a new one."""


# -- error kinds ------------------------------------------------------------------------------
#: What a parser found wrong in the model's output (``ParseIssue.kind``; defined by the Rust core).
ParseIssueKind = Literal[
    "malformed_json",  # JSON that breaks the grammar
    "truncated",  # the output ended inside a call
    "unknown_tool",  # a call names a tool that was not offered
    "bad_arguments",  # arguments that are not what the tool takes (not an object, rejected by its schema)
    "unexpected_text",
    "missing_name",
    "missing_arguments",
    "malformed_markup",
    "invalid_unicode",
    "parser_mismatch",  # the configured parser found nothing in output written in another known format
]

#: Why one tool call of a rollout failed (``ToolError.kind``); the model saw the message.
ToolErrorKind = Literal["unknown_tool", "malformed_json", "bad_arguments", "tool_failed", "timeout"]

#: Why a backend could not run a call (``ExecResult.error_type``); a command that merely exits
#: non-zero is not an error.
ExecErrorKind = Literal[
    "bad_arguments",  # arguments missing or of the wrong type
    "unknown_tool",
    "not_found",  # a file that does not exist
    "permission_denied",  # a path outside the workspace
    "too_large",  # a file over the read or write limit
    "worker_lost",  # the sandbox worker died or stopped answering mid-call
    "no_slot",  # no sandbox slot could be acquired
    "sandbox_unavailable",  # isolation required but the sandbox could not be set up
    "tool_server",  # the external tool server failed or refused
    "internal",
]

#: Every kind, each listed once.
ERROR_KINDS: tuple[str, ...] = tuple(
    dict.fromkeys(get_args(ParseIssueKind) + get_args(ToolErrorKind) + get_args(ExecErrorKind) + ROLLOUT_FAILURE_KINDS)
)

__all__ = [
    "BackendOptionsError",
    "UnknownParserError",
    "TrajectoryError",
    "TrajectoryDivergence",
    "ToolSchemaError",
    "RenderTypeError",
    "RenderError",
    "ParserUsageError",
    "CoreStateError",
    "BpeConfigError",
    "UvUnavailableError",
    "ToolboxError",
    "ReplayFileError",
    "PortError",
    "HarborTaskError",
    "BackendFailure",
    "BackendUnavailableError",
    "ChannelClosedError",
    "ConfigError",
    "ContainerError",
    "ContainerLostError",
    "DatasetError",
    "ERROR_KINDS",
    "EngineCommandError",
    "EngineUnavailableError",
    "EnvSetupError",
    "ExecErrorKind",
    "FileTooLargeError",
    "GGUFError",
    "GenerationRequestError",
    "HermesEnvError",
    "ImageBuildError",
    "ImageUnavailableError",
    "InferenceServerUnreachable",
    "JudgeError",
    "LlamaDecodeError",
    "ParseIssueKind",
    "PhaseError",
    "PolicyCallError",
    "PoolClosedError",
    "ROLLOUT_FAILURE_KINDS",
    "RolloutFailed",
    "RolloutFailureKind",
    "SandboxPoolError",
    "SlotAcquireTimeout",
    "TeacherError",
    "ToolArgumentError",
    "ToolCallError",
    "ToolServerError",
    "ToolsetUnavailableError",
    "TurnRewardError",
    "ToolErrorKind",
    "WorkerStartError",
    "WorkspaceReaped",
    "WorkspacePathError",
]
