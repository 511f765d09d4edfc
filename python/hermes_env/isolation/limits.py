"""Resource limits of a sandboxed command: one set of names, in bytes and seconds, for every backend.

Sizes accept a number of bytes or a string such as ``"512MiB"`` / ``"4GB"`` (pydantic ``ByteSize``).
How each limit is enforced:

- ``cpu_seconds``, ``memory_bytes`` (address space), ``max_processes``, ``max_file_bytes``: kernel
  rlimits set by ``prlimit`` on every process of the command (``max_processes`` counts the
  processes of the command's user, so it is per task only where each task has its own uid).
- ``max_output_bytes`` / ``kill_output_bytes``: by the reader of the command's output.
- ``disk_bytes``: the workspace is a tmpfs of that size (root only; see ``hermes_env.isolation.quota``);
  ``tmp_bytes``: the size of the sandbox's private ``/tmp``.
- ``max_read_bytes``: the largest file ``read_file`` returns; ``max_file_bytes`` also caps ``write_file``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ByteSize, ConfigDict, Field, model_validator

from hermes_env.errors import BackendUnavailableError
from hermes_env.isolation.users import system_tool

MiB = 1024**2
GiB = 1024**3

# Old option names still accepted (users' YAML): old -> (new name, conversion of the value).
_RENAMED: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "memory_mb": ("memory_bytes", lambda mb: int(mb) * MiB),
    "max_file_bytes_written": ("max_file_bytes", int),
}


def apply_renamed_options(
    data: Any, renamed: Mapping[str, tuple[str, Callable[[Any], Any]]], what: str, hint: str = ""
) -> Any:
    """``data`` (a model's raw input) with deprecated option names replaced by their new names, warning once each."""
    if not isinstance(data, dict):
        return data
    data = dict(data)
    for old, (new, convert) in renamed.items():
        if old not in data:
            continue
        value = convert(data.pop(old))
        if new in data and data[new] != value:
            raise ValueError(f"both {old!r} and {new!r} are set; keep only {new!r}")
        warnings.warn(f"{what} {old!r} is deprecated; use {new!r}{hint}", FutureWarning, stacklevel=2)
        data[new] = value
    return data


class ResourceLimits(BaseModel):
    """Per-command limits; the defaults suit agent tasks (tests, builds, small servers)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cpu_seconds: int = Field(120, ge=1, description="RLIMIT_CPU of each process of a command")
    memory_bytes: ByteSize = Field(ByteSize(4 * GiB), ge=16 * MiB, description="RLIMIT_AS of each process")
    max_processes: int = Field(256, ge=4, description="RLIMIT_NPROC: processes of the task's user at once")
    max_file_bytes: ByteSize = Field(
        ByteSize(512 * MiB), ge=1024, description="RLIMIT_FSIZE: largest file a command or write_file writes"
    )
    max_read_bytes: ByteSize = Field(ByteSize(64 * MiB), ge=1024, description="largest file read_file returns")
    max_output_bytes: ByteSize = Field(ByteSize(256 * 1024), ge=256, description="output kept per call")
    kill_output_bytes: ByteSize = Field(
        ByteSize(32 * MiB), ge=256, description="output after which the command is stopped (an endless `yes`)"
    )
    disk_bytes: ByteSize | None = Field(
        ByteSize(GiB), ge=MiB, description="size of the task's workspace (a tmpfs; None: no quota)"
    )
    tmp_bytes: ByteSize = Field(ByteSize(256 * MiB), ge=MiB, description="size of the sandbox's private /tmp")

    @model_validator(mode="before")
    @classmethod
    def _renamed_options(cls, data: Any) -> Any:
        return apply_renamed_options(data, _RENAMED, "resource limit", hint=" (in bytes, or a string such as '512MiB')")

    @model_validator(mode="after")
    def _check_output(self) -> ResourceLimits:
        if self.kill_output_bytes < self.max_output_bytes:
            raise ValueError(
                f"kill_output_bytes ({self.kill_output_bytes}) is below max_output_bytes ({self.max_output_bytes}); "
                "raise kill_output_bytes"
            )
        return self

    @classmethod
    def option_names(cls) -> set[str]:
        """Every name accepted as a limit, the deprecated ones included."""
        return set(cls.model_fields) | set(_RENAMED)

    def prlimit_argv(self, *, nproc_offset: int = 0) -> list[str]:
        """``prlimit`` prefix applying the rlimits; they are inherited through bwrap by every process of the command.

        ``nproc_offset``: processes the command's user already runs (where tasks share a uid the count is
        per user, not per task).
        """
        prlimit = system_tool("prlimit")
        if prlimit is None:
            raise BackendUnavailableError(
                "prlimit (util-linux) is not installed; it applies the sandbox's resource limits"
            )
        return [
            prlimit,
            f"--cpu={self.cpu_seconds}",
            f"--as={int(self.memory_bytes)}",
            f"--nproc={self.max_processes + nproc_offset}",
            f"--fsize={int(self.max_file_bytes)}",
            "--core=0",
            "--",
        ]
