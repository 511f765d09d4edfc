"""The one seam between tools and the place they run.

Every tool that touches a rollout's workspace (terminal, files, ToolContext in rewards)
goes through an :class:`ExecutionBackend`. Implementations: ``local`` (a directory per
task), ``bwrap`` (bubblewrap per call), and the sandbox pool (``hermes_env.sandbox``),
which spreads slots over worker processes on one machine or a Ray cluster.

Contract:
- ``task_id`` names one rollout; its workspace is created on first use (``start`` is
  idempotent) and destroyed by ``cleanup``; two task ids never see each other's files.
- Paths given to file methods are relative to the workspace root (absolute paths are
  taken as workspace-rooted); anything resolving outside the workspace raises
  ``PermissionError``.
- A crashed or hung command never raises out of ``execute``: it comes back as an
  :class:`ExecResult` with ``exit_code != 0`` (and ``timed_out`` when the limit was hit),
  so one bad tool call fails that call and not the run. When the backend itself failed
  (a worker died, the sandbox could not start) ``ExecResult.error`` says so; tools turn that
  into :class:`BackendFailure`, which fails the rollout (not the model's doing) but not the run.
- All methods are coroutines and never block the event loop.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass


class BackendFailure(RuntimeError):
    """The backend failed under a tool call (worker died, sandbox crashed): the rollout's workspace is
    gone or unusable, so the rollout fails instead of telling the model its call went wrong."""


@dataclass(frozen=True, slots=True)
class ExecResult:
    """Result of one command.

    ``output`` is stdout and stderr combined (``local`` and ``bwrap`` merge them in the order they were
    written), cut to the backend's limit with a note (``truncated``). ``exit_code`` is negative when the
    command was killed by a signal (timeout, output flood).
    """

    output: str
    exit_code: int
    timed_out: bool = False
    truncated: bool = False
    error: str | None = None  # set when the backend itself failed (worker died, sandbox crashed)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and self.error is None


class ExecutionBackend(abc.ABC):
    """Runs commands and file operations inside one workspace per task id."""

    name: str = "abstract"

    async def start(self, task_id: str) -> None:  # noqa: B027 - optional hook
        """Create the task's workspace if it does not exist yet (idempotent)."""

    @abc.abstractmethod
    async def execute(self, task_id: str, command: str, timeout: float, *, stdin: str | None = None) -> ExecResult:
        """Run a shell command in the task's workspace (cwd = workspace root)."""

    @abc.abstractmethod
    async def read_file(self, task_id: str, path: str) -> bytes:
        """Bytes of a workspace file; FileNotFoundError / PermissionError as usual."""

    @abc.abstractmethod
    async def write_file(self, task_id: str, path: str, data: bytes) -> None:
        """Create or replace a workspace file (parents created)."""

    @abc.abstractmethod
    async def list_files(self, task_id: str, path: str = ".") -> list[str]:
        """Workspace-relative paths of the regular files under ``path``, recursively, sorted."""

    @abc.abstractmethod
    async def cleanup(self, task_id: str) -> None:
        """Destroy the task's workspace and any process still running for it (idempotent)."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release backend-wide resources (worker processes, pools)."""
