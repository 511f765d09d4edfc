"""``AgentEnvConfig``: the fields of hermes-agent's ``atropos/`` integration (AgentEnv), mapped onto hermes_env's
slot pool and agent loop.

Every field of hermes-agent's ``AgentEnvConfig`` (``atropos/envs/agent_env.py``) is accepted with its
default (``tool_pool_mode`` excepted: ``local`` here). The ones with a meaning here map onto
:class:`~hermes_env.env.config.HermesAgentEnvConfig`:

- the slot pool: ``tool_pool_mode`` (``local`` worker processes, ``ray`` actors, ``container``
  containers on docker/podman) → the pool's launcher; ``slots_per_container`` /
  ``min_containers`` / ``max_containers`` → slots per worker and the worker count range;
  ``acquire_timeout_s``; ``tool_batch_window_ms`` / ``tool_max_batch_size`` → the executor's
  batching; ``allow_network`` / ``require_sandbox`` / ``require_stateful_sandbox`` → the sandbox
  policy; with ``tool_pool_mode: container``, ``sandbox_image`` (when set) → the workers' image
  (``container_image``; it needs python3). That is ``terminal_backend: sandbox`` (the default);
  ``terminal_backend`` ``local``, ``bwrap`` or ``docker`` runs the rollouts on that backend instead
  (``terminal_backend_options`` configure it; the pool fields are then unused).
- the agent: ``agent_max_steps`` → ``max_agent_turns``, ``agent_max_tokens`` →
  ``max_tokens_per_turn``, ``agent_temperature`` (0.7, as upstream),
  ``agent_tool_delay_s`` (a pause before each tool call).
- tools: ``enabled_toolsets`` (default ``["default"]``: terminal and the file read/write tools),
  ``disabled_toolsets``, ``tool_server_url`` (``inprocess`` runs the tool server in this process
  with ``tool_server_tools``), ``tool_server_token``.

Nomad- and Modal-specific fields (``nomad_address``, ``sandbox_job_id``, ``modal_*``...) are
accepted so upstream configs load, but they have no effect: setting one logs a warning, and
``tool_pool_mode: nomad|modal`` on the slot pool is an error naming the modes that exist.
"""

from __future__ import annotations

import logging
from typing import Any

from pydantic import Field, model_validator

from hermes_env.env.config import HermesAgentEnvConfig
from hermes_env.slot_pool.config import LAUNCHERS

logger = logging.getLogger(__name__)

# tool_pool_mode names one of the pool's launchers (local, ray, container).
POOL_MODES = tuple(LAUNCHERS)
# Where AgentEnv rollouts run: the slot pool, or one of the per-rollout backends.
ROLLOUT_BACKENDS = ("sandbox", "local", "bwrap", "docker")

# hermes-agent's Nomad/Modal fields and defaults: accepted, without effect here.
_NOMAD_FIELDS: dict[str, Any] = {
    "nomad_address": "http://localhost:4646",
    "sandbox_job_id": "atropos-sandbox-agent-env",
    "sandbox_image": "atropos-sandbox:local",
    "privileged": False,
    "purge_job_on_start": False,
    "purge_job_on_shutdown": True,
    "driver": "docker",
    "singularity_image": None,
}
_MODAL_FIELDS: dict[str, Any] = {
    "modal_app_name": "atropos-sandbox",
    "modal_image": "python:3.11",
    "modal_gpu": None,
    "modal_cpu": 1.0,
    "modal_memory": 2048,
    "modal_slots_per_sandbox": 10,
    "modal_min_sandboxes": 1,
    "modal_max_sandboxes": 5,
    "modal_idle_timeout": 120,
    "modal_max_lifetime": 3600,
    "modal_acquire_timeout": 60.0,
    "modal_execution_timeout": 30.0,
    "modal_secrets": "",
    "modal_env_vars": "",
    "modal_workspace_base": "/data",
}
UNUSED_FIELDS = {**_NOMAD_FIELDS, **_MODAL_FIELDS}
_WARNED_UNUSED: set[tuple[str, ...]] = set()


class AgentEnvConfig(HermesAgentEnvConfig):
    """The AgentEnv configuration (see the module docstring for how each field maps)."""

    tool_pool_mode: str = Field(
        default="local",
        description="Where sandbox workers run: local (processes), ray (actors), container (docker/podman).",
    )
    allow_network: bool = Field(default=True, description="Whether sandbox commands may access the network.")
    require_sandbox: bool = Field(
        default=False, description="Fail closed if bubblewrap sandboxing is unavailable for stateless tools."
    )
    require_stateful_sandbox: bool = Field(
        default=False, description="Fail closed if bubblewrap is unavailable for stateful terminal tools (tmux)."
    )
    tool_batch_window_ms: int = Field(default=20, ge=0, description="ToolExecutor batching window (ms).")
    tool_max_batch_size: int = Field(default=200, ge=1, description="ToolExecutor maximum batch size.")
    slots_per_container: int = Field(default=10, ge=1, description="Slots (workspaces) per sandbox worker.")
    min_containers: int = Field(default=1, ge=0, description="Fewest sandbox workers kept running.")
    max_containers: int = Field(default=10, ge=1, description="Most sandbox workers started.")
    acquire_timeout_s: float = Field(default=30.0, gt=0, description="Slot acquisition timeout (seconds).")

    agent_max_steps: int = Field(default=50, ge=1, description="Max model turns per trajectory (max_agent_turns).")
    agent_temperature: float = Field(default=0.7, ge=0.0, description="Sampling temperature.")
    agent_max_tokens: int | None = Field(
        default=None, ge=1, description="Max tokens per model response (max_tokens_per_turn); None: the server's."
    )
    agent_tool_delay_s: float = Field(default=0.0, ge=0.0, description="Delay before each tool call (seconds).")

    enabled_toolsets: list[str] | str | None = Field(
        default_factory=lambda: ["default"], description="Toolsets to enable (default: terminal + file read/write)."
    )
    disabled_toolsets: list[str] | str | None = Field(
        default_factory=list, description="Toolsets to disable (applied after enabled_toolsets)."
    )
    terminal_backend: str = Field(
        default="sandbox",
        description="sandbox (the slot pool the pool fields describe), or local, bwrap, docker (that backend).",
    )

    # hermes-agent's Nomad/Modal settings: accepted, no effect (see the module docstring).
    nomad_address: str = _NOMAD_FIELDS["nomad_address"]
    sandbox_job_id: str = _NOMAD_FIELDS["sandbox_job_id"]
    sandbox_image: str = _NOMAD_FIELDS["sandbox_image"]
    privileged: bool = _NOMAD_FIELDS["privileged"]
    purge_job_on_start: bool = _NOMAD_FIELDS["purge_job_on_start"]
    purge_job_on_shutdown: bool = _NOMAD_FIELDS["purge_job_on_shutdown"]
    driver: str = _NOMAD_FIELDS["driver"]
    singularity_image: str | None = _NOMAD_FIELDS["singularity_image"]
    modal_app_name: str = _MODAL_FIELDS["modal_app_name"]
    modal_image: str = _MODAL_FIELDS["modal_image"]
    modal_gpu: str | None = _MODAL_FIELDS["modal_gpu"]
    modal_cpu: float = _MODAL_FIELDS["modal_cpu"]
    modal_memory: int = _MODAL_FIELDS["modal_memory"]
    modal_slots_per_sandbox: int = _MODAL_FIELDS["modal_slots_per_sandbox"]
    modal_min_sandboxes: int = _MODAL_FIELDS["modal_min_sandboxes"]
    modal_max_sandboxes: int = _MODAL_FIELDS["modal_max_sandboxes"]
    modal_idle_timeout: int = _MODAL_FIELDS["modal_idle_timeout"]
    modal_max_lifetime: int = _MODAL_FIELDS["modal_max_lifetime"]
    modal_acquire_timeout: float = _MODAL_FIELDS["modal_acquire_timeout"]
    modal_execution_timeout: float = _MODAL_FIELDS["modal_execution_timeout"]
    modal_secrets: str = _MODAL_FIELDS["modal_secrets"]
    modal_env_vars: str = _MODAL_FIELDS["modal_env_vars"]
    modal_workspace_base: str = _MODAL_FIELDS["modal_workspace_base"]

    @model_validator(mode="before")
    @classmethod
    def _agent_fields(cls, data: Any) -> Any:
        """The agent_* fields decide the loop settings unless the hermes_env names are set."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        if "max_agent_turns" not in data:
            data["max_agent_turns"] = data.get("agent_max_steps", cls.model_fields["agent_max_steps"].default)
        if "max_tokens_per_turn" not in data:
            data["max_tokens_per_turn"] = data.get("agent_max_tokens")
        return data

    @model_validator(mode="after")
    def _check_backend(self) -> AgentEnvConfig:
        # Replaces hermes_env's check of the same name: the pool fields first (their errors name the fields
        # set here), then the options the backend is built with (pool_options, typed).
        if self.terminal_backend not in ROLLOUT_BACKENDS:
            raise ValueError(
                f"unknown terminal_backend {self.terminal_backend!r} for AgentEnv; use one of "
                f"{', '.join(ROLLOUT_BACKENDS)} (sandbox is the slot pool)"
            )
        if self.terminal_backend == "sandbox":
            self._check_pool_mode()
        if self.min_containers > self.max_containers:
            raise ValueError(
                f"min_containers ({self.min_containers}) is larger than max_containers ({self.max_containers})"
            )
        ignored = sorted(
            k for k, default in UNUSED_FIELDS.items() if getattr(self, k) != default and k != self._worker_image_field
        )
        if ignored and tuple(ignored) not in _WARNED_UNUSED:  # configs are built several times per run: warn once
            _WARNED_UNUSED.add(tuple(ignored))
            logger.warning(
                "AgentEnvConfig: %s configure hermes-agent's Nomad/Modal pools and have no effect here "
                "(the slot pool uses tool_pool_mode, slots_per_container, min_containers, max_containers)",
                ", ".join(ignored),
            )
        self.check_backend_options()
        return self

    def check_backend_options(self) -> None:
        if self.pool_mode_problem() is None:
            super().check_backend_options()
            return
        # A refused tool_pool_mode may load (hermes-agent's default, nomad, must, so that flags can replace it);
        # the environment names it when it starts. The other options are checked now.
        from hermes_env.backends.registry import backend_config

        options = self.backend_options()
        options.pop("launcher", None)
        backend_config(self.terminal_backend, options)

    def _check_pool_mode(self) -> None:
        problem = self.pool_mode_problem()
        if problem is not None:
            raise ValueError(problem)

    def pool_mode_problem(self) -> str | None:
        """Why the rollouts cannot run on ``tool_pool_mode`` here (None where they can)."""
        if self.terminal_backend != "sandbox":
            return None
        if self.tool_pool_mode in ("nomad", "modal"):
            return (
                f"tool_pool_mode {self.tool_pool_mode!r} (hermes-agent's {self.tool_pool_mode.capitalize()} backend) "
                f"is not available in hermes_env; pass --env.tool_pool_mode with one of {', '.join(POOL_MODES)} "
                "(the slot pool), or --env.terminal_backend bwrap|docker|local"
            )
        if self.tool_pool_mode not in POOL_MODES:
            return (
                f"unknown tool_pool_mode {self.tool_pool_mode!r}; use one of {', '.join(POOL_MODES)} (the slot pool), "
                "or --env.terminal_backend bwrap|docker|local"
            )
        return None

    @property
    def _worker_image_field(self) -> str | None:
        """``sandbox_image`` where it names an image here: the container workers' (upstream's Nomad job ran that
        image) or, on the docker backend, the rollouts' default image."""
        uses_image = self.terminal_backend == "docker" or (
            self.terminal_backend == "sandbox" and self.tool_pool_mode == "container"
        )
        return "sandbox_image" if uses_image else None

    def backend_options(self) -> dict[str, Any]:
        """``terminal_backend_options`` of the backend the rollouts run on: the slot pool's from the pool fields;
        bwrap and docker get ``allow_network`` (and docker ``sandbox_image`` as its image, when set); explicit
        ``terminal_backend_options`` win."""
        if self.terminal_backend == "sandbox":
            return self.pool_options()
        if self.terminal_backend == "local":
            return dict(self.terminal_backend_options)
        options: dict[str, Any] = {"allow_network": self.allow_network}
        if self._worker_image_field and self.sandbox_image != _NOMAD_FIELDS["sandbox_image"]:
            options["image"] = self.sandbox_image
        return {**options, **self.terminal_backend_options}

    def pool_options(self) -> dict[str, Any]:
        """``terminal_backend_options`` of the slot pool these fields describe, in the flat form the sandbox
        backend's typed options (``hermes_env.backends.sandbox.SandboxOptions``) read: each key goes to its one
        section there (hermes-agent's names are mapped here, once)."""
        image: dict[str, Any] = {}
        if self._worker_image_field and self.sandbox_image != _NOMAD_FIELDS["sandbox_image"]:
            image["container_image"] = self.sandbox_image
        return {
            "launcher": self.tool_pool_mode,
            **image,
            "slots_per_worker": self.slots_per_container,
            "min_workers": self.min_containers,
            "max_workers": self.max_containers,
            "acquire_timeout_s": self.acquire_timeout_s,
            "batch_window_ms": float(self.tool_batch_window_ms),
            "max_batch_size": self.tool_max_batch_size,
            "allow_network": self.allow_network,
            "require_sandbox": self.require_sandbox or self.require_stateful_sandbox,
            **self.terminal_backend_options,
        }
