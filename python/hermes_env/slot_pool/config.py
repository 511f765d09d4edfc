"""Configuration of the sandbox pool: isolation policy, resource limits, pool sizing, batching.

Policy (network, whether isolation is mandatory, limits) is fixed by the environment when the pool
is created and passed to every worker on its command line; requests from the model cannot change it.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ByteSize, ConfigDict, Field, SecretStr, model_validator

from hermes_env.isolation.limits import ResourceLimits, apply_renamed_options
from hermes_env.timeouts import TRANSPORT_GRACE_S, CallBudget, clamp_timeout

#: How workers are started: launcher name -> "module:Class" (a ``WorkerLauncher`` built from the PoolConfig).
LAUNCHERS: dict[str, str] = {
    "local": "hermes_env.slot_pool.launchers.local:LocalLauncher",
    "ray": "hermes_env.slot_pool.launchers.ray:RayLauncher",
    "container": "hermes_env.slot_pool.launchers.container:ContainerLauncher",
}


class SandboxPolicy(BaseModel):
    """What the environment allows its rollouts; set once per pool."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    allow_network: bool = False
    require_sandbox: bool = True
    limits: ResourceLimits = Field(default_factory=ResourceLimits)
    # Extra host paths mounted read-only inside the sandbox (e.g. a toolchain outside /usr).
    ro_paths: tuple[str, ...] = ()
    # Variables added to (or overriding) the sandboxed commands' environment, e.g. a PATH reaching such a toolchain.
    env: tuple[tuple[str, str], ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _env_pairs(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("env"), dict):
            data = {**data, "env": tuple((str(k), str(v)) for k, v in data["env"].items())}
        return data


class PoolConfig(BaseModel):
    """Sizing and lifecycle of the worker pool."""

    model_config = ConfigDict(extra="forbid")

    # Old option names still accepted (users' YAML says ``backend: ray``).
    RENAMED: ClassVar[dict[str, str]] = {"backend": "launcher"}

    launcher: str = Field("local", description=f"how workers are started: {', '.join(LAUNCHERS)}")
    slots_per_worker: int = Field(8, ge=1, le=1024)
    min_workers: int = Field(1, ge=0)
    max_workers: int = Field(4, ge=1)
    scale_down_cooldown_s: float = Field(60.0, ge=0.0, description="idle time before a surplus worker stops")
    health_interval_s: float = Field(2.0, gt=0.0)
    # A live worker that is merely slow (e.g. 256 rollouts on 2 cores) must not be killed for one late answer:
    # it is replaced after this many consecutive timed-out checks; one whose process exited or refuses connections
    # goes at once.
    health_failures_to_replace: int = Field(3, ge=1)
    worker_start_timeout_s: float = Field(60.0, gt=0.0)
    acquire_timeout_s: float = Field(120.0, gt=0.0, description="default wait for a free slot")
    root_dir: str | None = Field(None, description="where slot workspaces live; a temp dir when unset")
    # Ray only: address of an existing cluster ("auto" or "host:port"); None means already initialised.
    ray_address: str | None = None
    # Ray only: "node_affinity" balances workers over nodes explicitly; "spread" uses Ray's SPREAD strategy.
    ray_placement: Literal["node_affinity", "spread"] = "node_affinity"
    # Container launcher only (hermes_env.slot_pool.launchers.container): each worker is a container of this image.
    container_engine: str | None = Field(None, description="docker or podman; the first that works when unset")
    container_image: str | None = Field(None, description="the workers' image (needs python3); the base image if unset")
    container_cpus: float = Field(2.0, gt=0.0, description="CPUs of each worker's container")
    container_memory_bytes: ByteSize | None = Field(
        None, ge=64 * 1024**2, description="a worker container's memory; slots x memory_bytes when unset"
    )
    container_max_processes: int | None = Field(
        None, ge=16, description="a worker container's processes; slots x max_processes + 64 when unset"
    )

    @model_validator(mode="before")
    @classmethod
    def _renamed_options(cls, data: Any) -> Any:
        renamed = {old: (new, lambda value: value) for old, new in cls.RENAMED.items()}
        return apply_renamed_options(data, renamed, "sandbox pool option", hint=" (it picks how workers are started)")

    @model_validator(mode="after")
    def _check_bounds(self) -> PoolConfig:
        if self.launcher not in LAUNCHERS:
            raise ValueError(f"unknown sandbox launcher {self.launcher!r}; valid launchers: {', '.join(LAUNCHERS)}")
        if self.min_workers > self.max_workers:
            raise ValueError(
                f"min_workers ({self.min_workers}) is larger than max_workers ({self.max_workers}); "
                "set min_workers <= max_workers"
            )
        return self


class ExecutorConfig(BaseModel):
    """Batching and timeouts of the tool executor."""

    model_config = ConfigDict(extra="forbid")

    batch_window_ms: float = Field(5.0, ge=0.0)
    max_batch_size: int = Field(64, ge=1)
    default_timeout_s: float = Field(60.0, gt=0.0)
    max_timeout_s: float = Field(600.0, gt=0.0)
    min_timeout_s: float = Field(0.1, gt=0.0)
    # Extra seconds the HTTP request to a worker may take beyond the longest call timeout.
    transport_grace_s: float = Field(TRANSPORT_GRACE_S, ge=0.0)
    tool_server_url: str | None = None
    tool_server_token: SecretStr | None = None
    external_tools: frozenset[str] = frozenset()

    def clamp_timeout(self, requested: float | None) -> float:
        """The timeout a call actually gets: the default when unset, kept within [min, max]
        (``hermes_env.timeouts.clamp_timeout``; the default too is kept within them)."""
        value = self.default_timeout_s if requested is None else requested
        return clamp_timeout(value, default=value, maximum=self.max_timeout_s, minimum=self.min_timeout_s)

    def budget(self, requested: float | None) -> CallBudget:
        """The call's budget: its clamped timeout, with this executor's transport grace."""
        return CallBudget(self.clamp_timeout(requested), transport_grace=self.transport_grace_s)
