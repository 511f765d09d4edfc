"""The one seam between tools and the place they run.

Every tool that touches a rollout's workspace (terminal, files, ToolContext in rewards)
goes through an :class:`ExecutionBackend`. Implementations: ``local`` (a directory per
task, no isolation), ``bwrap`` (bubblewrap per call) and ``sandbox`` (the slot pool of
sandbox workers, on one machine or a Ray cluster); ``backends.registry`` names them.

Contract:
- ``task_id`` names one rollout; its workspace is created on first use (``start`` is
  idempotent) and destroyed by ``cleanup``; two task ids never see each other's files.
- Paths given to file methods are relative to the workspace root, or absolute under the
  prefix at which commands see the workspace (:meth:`ExecutionBackend.visible_roots`, e.g.
  ``/workspace``); anything else, or anything resolving outside the workspace, raises
  ``WorkspacePathError`` (a ``PermissionError``).
- A crashed or hung command never raises out of ``execute``: it comes back as an
  :class:`ExecResult` with ``exit_code != 0`` (and ``timed_out`` when the limit was hit),
  so one bad tool call fails that call and not the run. When the backend itself failed
  (a worker died, the sandbox could not start) ``ExecResult.error`` says so; tools turn that
  into :class:`BackendFailure`, which fails the rollout (not the model's doing) but not the run.
- All methods are coroutines and never block the event loop.
"""

from __future__ import annotations

import abc
import inspect
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel

from hermes_env.backends.options import BackendOptions, validate_options
from hermes_env.isolation.bubblewrap import WORKSPACE_MOUNT
from hermes_env.isolation.limits import ResourceLimits
from hermes_env.isolation.result import ExecResult

if TYPE_CHECKING:
    from hermes_env.containers.images import ImageSpec

__all__ = ["ExecResult", "ExecutionBackend"]


class ExecutionBackend(abc.ABC):
    """Runs commands and file operations inside one workspace per task id."""

    name: ClassVar[str] = "abstract"
    #: Whether each task can run in a container image of its own (:meth:`use_image`; the ``docker`` backend).
    supports_images: ClassVar[bool] = False

    #: The :class:`ResourceLimits` the backend applies, and so accepts as options (besides ``limits``, all of them).
    limit_options: ClassVar[frozenset[str]] = frozenset()

    #: The typed model of the options (``backends.options``); read from the class that declares it only, so a
    #: subclass with constructor arguments of its own is checked against its signature instead.
    options_model: ClassVar[type[BaseModel] | None] = None

    @classmethod
    def _own_options_model(cls) -> type[BaseModel] | None:
        model: type[BaseModel] | None = cls.__dict__.get("options_model")
        return model

    @classmethod
    def accepted_options(cls) -> list[str]:
        """Keyword options :meth:`from_options` accepts (those of its options model, or else of ``__init__`` and
        its limit options)."""
        model = cls._own_options_model()
        if model is not None:
            return model.option_names() if issubclass(model, BackendOptions) else sorted(model.model_fields)
        params = inspect.signature(cls.__init__).parameters.values()
        names = {p.name for p in params if p.name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
        return sorted(names | cls.limit_options | ({"limits"} if cls.limit_options else set()))

    @classmethod
    def resource_limits(
        cls, limits: ResourceLimits | Mapping[str, Any] | None, options: Mapping[str, Any]
    ) -> ResourceLimits:
        """``limits`` with ``options`` (single limits) on top; ValueError naming the valid options for another."""
        unknown = sorted(set(options) - cls.limit_options)
        if unknown:
            raise ValueError(
                f"backend {cls.name!r} does not accept option(s) {', '.join(map(repr, unknown))}; "
                f"valid options: {', '.join(cls.accepted_options())}"
            )
        base = limits.model_dump() if isinstance(limits, ResourceLimits) else dict(limits or {})
        return ResourceLimits.model_validate({**base, **options})

    @classmethod
    def from_options(cls, **options: Any) -> ExecutionBackend:
        """A backend from ``terminal_backend_options``; ValueError naming the valid options for an unknown one
        (BackendOptionsError naming the field, where the class declares an ``options_model``)."""
        model = cls._own_options_model()
        if model is not None:
            return cls.from_config(validate_options(model, cls.name, options))
        valid = cls.accepted_options()
        unknown = sorted(set(options) - set(valid))
        if unknown:
            raise ValueError(
                f"backend {cls.name!r} does not accept option(s) {', '.join(map(repr, unknown))}; "
                f"valid options: {', '.join(valid)}"
            )
        return cls(**options)

    @classmethod
    def from_config(cls, config: BaseModel) -> ExecutionBackend:
        """A backend from its validated options model."""
        if isinstance(config, BackendOptions):
            return cls(**config.backend_kwargs())
        return cls(**config.model_dump(exclude_unset=True))

    def visible_roots(self, task_id: str) -> tuple[str, ...]:
        """Absolute prefixes under which the task's commands see its workspace."""
        return (WORKSPACE_MOUNT,)

    def use_image(self, task_id: str, image: ImageSpec | None) -> None:
        """Run ``task_id`` in ``image`` (None: the backend's default); call before the task's first use."""
        raise NotImplementedError(f"backend {self.name!r} runs no container images; use terminal_backend docker")

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
