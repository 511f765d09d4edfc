"""Wire format between the executor and the sandbox servers (JSON over HTTP).

Requests forbid unknown fields: a request cannot smuggle policy (``allow_network`` ...) into a
worker, because policy is only read from the worker's command line. Results are the isolation
layer's :class:`~hermes_env.isolation.result.ExecResult`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hermes_env._renamed import old_names
from hermes_env.isolation.result import ExecResult

# Content type of a streamed /batch answer: one {"index": i, "result": ExecResult} line per call.
NDJSON = "application/x-ndjson"

# Tools every sandbox server runs. External tools go to the tool server instead.
SANDBOX_TOOLS = ("bash", "bash_stateful", "tmux", "read_file", "write_file")


class SlotCall(BaseModel):
    """One tool call to run in one slot of a worker."""

    model_config = ConfigDict(extra="forbid")

    slot: int = Field(ge=0)
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    timeout: float = Field(60.0, gt=0.0)


class BatchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    calls: list[SlotCall]


class BatchResponse(BaseModel):
    results: list[ExecResult]


class SlotRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    slot: int = Field(ge=0)


class ArtifactRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    slot: int = Field(ge=0)
    path: str = "."
    # archive only: "tar.gz" of the path, returned base64 in data["archive_b64"]
    max_bytes: int | None = Field(None, ge=1)


# ``ToolResult`` was this module's name for ExecResult; ``hermes_env.agent_env.ToolResult`` is the other thing so named.
# It still works for a release (hermes_env._renamed.OLD_NAMES), with a warning once.
__getattr__ = old_names(__name__)
