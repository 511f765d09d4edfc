"""Wire format between the executor and the sandbox servers (JSON over HTTP on 127.0.0.1).

Requests forbid unknown fields: a request cannot smuggle policy (``allow_network`` ...) into a
worker, because policy is only read from the worker's command line.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

# Content type of a streamed /batch answer: one {"index": i, "result": ToolResult} line per call.
NDJSON = "application/x-ndjson"

# Tools every sandbox server runs. External tools go to the tool server instead.
SANDBOX_TOOLS = ("bash", "bash_stateful", "tmux", "read_file", "write_file")

ErrorType = Literal[
    "bad_request",  # arguments missing or of the wrong type
    "unknown_tool",
    "not_found",  # read_file of a missing file
    "permission_denied",  # a path outside the workspace
    "too_large",  # a file over the read limit
    "worker_lost",  # the worker died or stopped answering mid-call
    "no_slot",  # no sandbox slot could be acquired (pool full past the timeout, workers cannot start)
    "sandbox_unavailable",  # isolation required but bubblewrap cannot run
    "tool_server",  # the external tool server failed or refused
    "internal",
]


class ToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid")

    slot: int = Field(ge=0)
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    timeout: float = Field(60.0, gt=0.0)


class ToolResult(BaseModel):
    """Outcome of one call. Failures are values (``error``/``error_type``), never exceptions."""

    model_config = ConfigDict(extra="forbid")

    output: str = ""
    exit_code: int = 0
    timed_out: bool = False
    truncated: bool = False
    error: str | None = None
    error_type: ErrorType | None = None
    # Structured extras: read_file's base64 content, the worker/node that ran the call, ...
    data: dict[str, Any] = Field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and self.error is None

    @classmethod
    def failure(cls, error_type: ErrorType, message: str, **data: Any) -> ToolResult:
        return cls(output=message, exit_code=-1, error=message, error_type=error_type, data=data)


class BatchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    calls: list[ToolCall]


class BatchResponse(BaseModel):
    results: list[ToolResult]


class SlotRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    slot: int = Field(ge=0)


class ArtifactRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    slot: int = Field(ge=0)
    path: str = "."
    # archive only: "tar.gz" of the path, returned base64 in data["archive_b64"]
    max_bytes: int | None = Field(None, ge=1)
