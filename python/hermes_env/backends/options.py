"""Typed options of each built-in backend: what ``terminal_backend_options`` may hold, checked when the config loads.

One model per backend, the discriminated union :data:`BackendConfig` over them (``kind`` names the backend):

- :class:`LocalOptions` (``local``), :class:`BwrapOptions` (``bwrap``), :class:`DockerOptions` (``docker``, with
  ``ray_address`` spreading its containers over a Ray cluster), and ``SandboxOptions`` (``sandbox``: the slot pool's
  ``pool`` / ``policy`` / ``executor`` sections; it lives in :mod:`hermes_env.backends.sandbox` so that naming
  another backend never imports the pool).
- Each option has one home: a resource limit lives in ``limits`` (a :class:`ResourceLimits`); the flat spelling
  (``max_output_bytes: 4096`` beside the other options, as hermes-agent's configs write it) is accepted for the
  limits the backend applies and moved there. The sandbox's flat keys go to the section that owns them.
- Unknown options fail with their path and the backend's valid options
  (``terminal_backend_options.slots_per_workr: backend 'sandbox' does not accept option 'slots_per_workr' ...``).

The environment's ``terminal_backend`` / ``terminal_backend_options`` keys stay as hermes-agent writes them;
``backends.registry.backend_config`` builds the union member from them (it lives with the registry, above the
sandbox backend whose options are in the union, so that this module imports no backend). A backend registered
under another name (``backends.registry.register_backend``) keeps plain keyword options, checked by its class's
own ``options_model`` when it declares one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from hermes_env.errors import BackendOptionsError
from hermes_env.isolation.bubblewrap import WORKSPACE_MOUNT
from hermes_env.isolation.limits import ResourceLimits

if TYPE_CHECKING:
    from hermes_env.backends.sandbox import SandboxOptions

#: The limits a backend on host workspaces applies by itself (output and file sizes), so accepts flat.
HOST_LIMITS = frozenset({"max_output_bytes", "kill_output_bytes", "max_file_bytes", "max_read_bytes"})
#: Old option names still accepted (each warns, naming its new name), left out of the lists of valid options.
DEPRECATED_NAMES = frozenset(set(ResourceLimits.option_names()) - set(ResourceLimits.model_fields)) | {"backend"}


def merge_limits(limits: Any, flat: Mapping[str, Any]) -> dict[str, Any]:
    """``limits`` (a ResourceLimits or a mapping) with the single limits ``flat`` on top, as a mapping."""
    if isinstance(limits, ResourceLimits):
        base = limits.model_dump(exclude_unset=True)
    elif isinstance(limits, Mapping):
        base = dict(limits)
    elif limits is None:
        base = {}
    else:
        raise ValueError(f"limits must be a mapping of limit names to values, got {type(limits).__name__}")
    return {**base, **flat}


class BackendOptions(BaseModel):
    """Options of one backend; ``kind`` names it. Subclasses list their fields with the backend's defaults."""

    model_config = ConfigDict(extra="forbid")

    kind: str
    #: Resource limits accepted flat beside the other options (moved into ``limits``).
    limit_names: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="before")
    @classmethod
    def _flat_limits(cls, data: Any) -> Any:
        if not isinstance(data, dict) or "limits" not in cls.model_fields:
            return data
        flat = {key: data[key] for key in data if key in cls.limit_names}
        if not flat:
            return data
        rest = {key: value for key, value in data.items() if key not in flat}
        return {**rest, "limits": merge_limits(rest.get("limits"), flat)}

    @classmethod
    def option_names(cls) -> list[str]:
        """Every option this backend accepts, flat limit names included."""
        return sorted(((set(cls.model_fields) - {"kind"}) | cls.limit_names) - DEPRECATED_NAMES)

    def backend_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of the backend's constructor: the options that were set (the constructor's
        defaults are these fields' defaults, which tests keep equal)."""
        return self.model_dump(exclude={"kind"}, exclude_unset=True)


class LocalOptions(BackendOptions):
    """``local``: a directory per task on this machine, no isolation."""

    kind: Literal["local"] = "local"
    limit_names: ClassVar[frozenset[str]] = HOST_LIMITS

    root: Path | None = Field(None, description="where task workspaces are made; a run folder under /tmp when unset")
    shell: str = Field("/bin/bash", description="the shell commands run in (/bin/sh where it is missing)")
    env: dict[str, str] | None = Field(None, description="variables added to the commands' small environment")
    inherit_env: bool = Field(False, description="start commands from this process's whole environment")
    limits: ResourceLimits | None = Field(None, description=f"resource limits; applied here: {', '.join(HOST_LIMITS)}")


class BwrapOptions(BackendOptions):
    """``bwrap``: each command in a fresh bubblewrap sandbox over the task's workspace."""

    kind: Literal["bwrap"] = "bwrap"
    limit_names: ClassVar[frozenset[str]] = frozenset(ResourceLimits.option_names())

    root: Path | None = Field(None, description="where task workspaces are made; a run folder under /tmp when unset")
    allow_network: bool = Field(False, description="share the host's network with the sandbox")
    workspace_mount: str = Field(WORKSPACE_MOUNT, description="where commands see the workspace")
    ro_paths: tuple[str, ...] = Field((), description="host paths mounted read-only at the same place")
    extra_ro_binds: dict[str, str] | None = Field(None, description="host path -> sandbox path, read-only")
    env: dict[str, str] | None = Field(None, description="variables added to the commands' environment")
    limits: ResourceLimits | None = Field(None, description="resource limits (all of them apply)")


class DockerOptions(BackendOptions):
    """``docker``: a container per task (docker or podman); with ``ray_address``, spread over a Ray cluster."""

    kind: Literal["docker"] = "docker"
    # memory_bytes is the container's memory (cgroup) limit, max_processes its pids limit; output and file sizes
    # are bounded as on every backend. memory_mb: the old name of memory_bytes (a FutureWarning).
    limit_names: ClassVar[frozenset[str]] = HOST_LIMITS | {"memory_bytes", "max_processes", "memory_mb"}

    engine: str | None = Field(None, description="docker or podman; the first that works when unset")
    image: str | None = Field(None, description="the default image of a task that names none")
    allow_network: bool = Field(False, description="give containers a network")
    cpus: float = Field(1.0, gt=0, description="CPUs of each container")
    workspace: str = Field("/workspace", description="where commands see the workspace (an absolute path)")
    env: dict[str, str] | None = Field(None, description="variables set in every container")
    transport: Literal["auto", "channel", "exec"] = Field("auto", description="how calls reach a container")
    start_timeout_s: float = Field(120.0, description="time limit of a container's start")
    image_build_timeout_s: float = Field(900.0, description="time limit of one image build")
    labels: dict[str, str] | None = Field(None, description="extra labels on each container")
    limits: ResourceLimits | None = Field(
        None, description="resource limits; applied here: memory_bytes, max_processes and the output/file sizes"
    )
    ray_address: str | None = Field(
        None, description="a Ray cluster's address (or auto): the containers spread over its nodes"
    )


if TYPE_CHECKING:
    BackendConfig = Annotated[LocalOptions | BwrapOptions | DockerOptions | SandboxOptions, Field(discriminator="kind")]
else:
    # The union is built on first use (``registry.backend_config_adapter``): the sandbox's options import the pool.
    BackendConfig = Any


def options_error(backend: str, valid: Iterable[str], err: ValidationError, *, strip: int = 0) -> BackendOptionsError:
    """One sentence per wrong field, each naming its path; an unknown option lists the backend's valid ones."""
    valid_text = ", ".join(valid)
    problems = []
    for error in err.errors():
        loc = [str(part) for part in error["loc"][strip:]]
        path = ".".join(["terminal_backend_options", *loc])
        if error["type"] == "extra_forbidden":
            problems.append(
                f"{path}: backend {backend!r} does not accept option {loc[-1]!r} (extra inputs are not permitted); "
                f"valid options: {valid_text}"
            )
        else:
            problems.append(f"{path}: {error['msg']} (backend {backend!r})")
    return BackendOptionsError("; ".join(problems))


def validate_options(model: type[BaseModel], backend: str, options: Mapping[str, Any]) -> BaseModel:
    """``options`` as ``model`` (one backend's options); BackendOptionsError naming each wrong field."""
    data = dict(options)
    if issubclass(model, BackendOptions):
        check_kind(backend, data)
        data.pop("kind", None)  # the model's own (a backend registered under another name may use a built-in's)
    try:
        return model.model_validate(data)
    except ValidationError as err:
        valid = model.option_names() if issubclass(model, BackendOptions) else sorted(model.model_fields)
        raise options_error(backend, valid, err) from None


def check_kind(backend: str, data: Mapping[str, Any]) -> None:
    """BackendOptionsError when the options' own ``kind`` names another backend than ``terminal_backend``."""
    if "kind" in data and data["kind"] != backend:
        raise BackendOptionsError(
            f"terminal_backend_options.kind is {data['kind']!r} but terminal_backend is {backend!r}; "
            "drop kind from the options (terminal_backend names the backend)"
        )
