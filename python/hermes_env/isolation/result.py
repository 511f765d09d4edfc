"""The result of one command or tool call, whatever ran it (a backend, a sandbox worker, the tool server)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hermes_env.errors import ExecErrorKind


class ExecResult(BaseModel):
    """Outcome of one call. Failures are values (``error`` / ``error_type``), never exceptions.

    ``output`` is stdout and stderr merged in the order they were written, cut to the output
    limit with a note (``truncated``). ``exit_code`` is the command's status (124 after a timeout,
    negative when a signal killed it). ``error`` is set only when the call could not run as asked
    (the sandbox or its worker failed, bad arguments): a command that exits non-zero is not an error.
    """

    model_config = ConfigDict(extra="forbid")

    output: str = ""
    exit_code: int = 0
    timed_out: bool = False
    truncated: bool = False
    error: str | None = None
    error_type: ExecErrorKind | None = None
    # Structured extras: read_file's base64 content, the worker/node that ran the call, ...
    data: dict[str, Any] = Field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and self.error is None

    @classmethod
    def failure(cls, error_type: ExecErrorKind, message: str, **data: Any) -> ExecResult:
        return cls(output=message, exit_code=-1, error=message, error_type=error_type, data=data)
