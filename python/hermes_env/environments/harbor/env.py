"""harbor: an environment over a folder of Harbor tasks (``--env.tasks_dir TASKS_DIR``).

One rollout is one container of the task's image (the ``docker`` backend; images built as
:mod:`hermes_env.containers.upstream_images` describes, cached), the model gets ``instruction.md`` as its prompt
and the usual tools, and the reward is the task's own verifier, run as Harbor runs it, offline
(:mod:`hermes_env.environments.harbor.runner`). From ``task.toml``: ``cpus`` (clamped to the host's), ``memory_mb``,
``allow_internet``, ``[environment.env]``, ``[agent].timeout_sec`` (the rollout's time limit) and
``[verifier].timeout_sec`` are honoured; what is not (``storage_mb``, ``gpus``, MCP servers) is logged at start.
A task whose image does not build is left out at start, with the end of its build log.

With ``--env.terminal_backend_options '{"ray_address": ...}'`` the containers spread over a Ray cluster
(:mod:`hermes_env.backends.ray_docker`): every node builds the task images on its own engine, each rollout runs on
one node, and a node that dies fails only its rollouts.
"""

from __future__ import annotations

import asyncio
import logging
import random
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator

from hermes_env.agent.loop import AgentResult
from hermes_env.containers.upstream_images import ImageMap
from hermes_env.env.config import HermesAgentEnvConfig, json_option
from hermes_env.env.run_modes import EvalOutcome
from hermes_env.environments._common import TaskFileEnv
from hermes_env.environments.harbor.runner import (
    FALLBACK_WORKDIR,
    HarborRunner,
    PreparedTask,
    prepare_on_ray,
    use_on_ray,
)
from hermes_env.environments.harbor.task import HarborTask, load_tasks
from hermes_env.errors import ContainerError, DatasetError

logger = logging.getLogger(__name__)

SYSTEM_PROMPT = (
    "You are an agent working in a Linux container. Use the tools to complete the task; when it is done, reply "
    "with a short summary and no tool call."
)


class HarborEnvConfig(HermesAgentEnvConfig):
    """harbor's settings; every field can be set from YAML or the command line."""

    tasks_dir: str | None = Field(default=None, description="A folder of Harbor tasks (required).")
    task_names: str | None = Field(default=None, description="Comma-separated task names to use (default: all).")
    system_prompt: str | None = Field(default=SYSTEM_PROMPT, description="System message.")
    total_steps: int = Field(default=8, description="process: groups written; serve: trainer steps.")
    max_token_length: int = Field(default=16384, ge=1, description="Most tokens of one rollout.")
    terminal_backend: str = Field(default="docker", description="Must be docker: each task runs in its image.")
    terminal_timeout: float = Field(default=600.0, gt=0, description="Time limit of one tool call, in seconds.")
    reward_timeout: float = Field(default=1800.0, gt=0, description="Time limit of the verifier, at most.")
    # `| str`: atroposlib's command line passes it as one JSON string, parsed below.
    image_map: dict[str, str] | str = Field(
        default_factory=dict, description="Upstream image pattern -> local base (debian:bookworm, python:3.13-"
        "bookworm, image:<ref>, ...), tried before the defaults."
    )  # fmt: skip
    max_parallel_builds: int = Field(default=2, ge=1, description="Task images built at once at start.")

    @field_validator("image_map", mode="before")
    @classmethod
    def _parse_image_map(cls, value: Any) -> Any:
        value = json_option(value, "image_map must be a JSON object of pattern -> target")
        if isinstance(value, dict):
            ImageMap(entries=value)  # each target must parse
        return value

    def image_map_entries(self) -> dict[str, str]:
        return self._parse_image_map(self.image_map) if isinstance(self.image_map, str) else dict(self.image_map)


class HarborEnv(TaskFileEnv):
    name = "harbor"
    env_config_cls = HarborEnvConfig
    config: HarborEnvConfig
    default_tasks_path = Path("harbor-tasks")
    server_timeout = 600

    harbor_tasks: dict[str, HarborTask]
    prepared: dict[str, PreparedTask]

    async def setup(self) -> None:
        if not self.config.tasks_dir:
            raise DatasetError("harbor needs a folder of Harbor tasks: --env.tasks_dir TASKS_DIR")
        if self.config.terminal_backend != "docker":
            raise DatasetError(
                f"harbor runs each task in its own container image; terminal_backend {self.config.terminal_backend!r}"
                " runs none. Use --env.terminal_backend docker"
            )
        names = [n.strip() for n in (self.config.task_names or "").split(",") if n.strip()] or None
        tasks = load_tasks(self.config.tasks_dir, names)
        if self._on_ray:  # built on every node of the cluster, by each node
            results = await prepare_on_ray(
                self.backend,
                tasks,
                image_map=self.config.image_map_entries(),
                max_parallel_builds=self.config.max_parallel_builds,
            )
        else:
            runner = HarborRunner(
                self.backend.engine, image_map=ImageMap(entries=self.config.image_map_entries()),
                max_parallel_builds=self.config.max_parallel_builds,
            )  # fmt: skip
            results = await asyncio.gather(*(runner.prepare(t) for t in tasks), return_exceptions=True)
        self.harbor_tasks, self.prepared = {}, {}
        for task, result in zip(tasks, results, strict=True):
            if isinstance(result, BaseException):
                if not isinstance(result, ContainerError | RuntimeError | TimeoutError):
                    raise result
                logger.error("harbor: leaving out task %s: its image did not build: %s", task.name, result)
                continue
            self.harbor_tasks[task.name] = task
            self.prepared[task.name] = result
            if result.notes:
                logger.warning("harbor: task %s: not honoured here: %s", task.name, "; ".join(result.notes))
            slowest = task.config.verifier.timeout_sec
            if slowest > self.config.reward_timeout:
                logger.warning(
                    "harbor: task %s's verifier may run %gs, past reward_timeout=%gs (raise --env.reward_timeout)",
                    task.name, slowest, self.config.reward_timeout,
                )  # fmt: skip
        if not self.prepared:
            raise DatasetError(f"no task of {self.config.tasks_dir} could be built; see the errors above")
        self.tasks = [{"id": name, "prompt": t.instruction} for name, t in self.harbor_tasks.items()]
        self._order = list(range(len(self.tasks)))
        random.Random(self.config.seed).shuffle(self._order)
        self._cursor = 0
        logger.info("harbor: %d of %d tasks ready in %s", len(self.tasks), len(tasks), self.config.tasks_dir)

    @property
    def _on_ray(self) -> bool:
        """Whether the backend spreads containers over a Ray cluster (a RayDockerBackend; not imported here, so
        that a run without Ray never imports it)."""
        return hasattr(self.backend, "on_every_node")

    def use_task_image(self, item: dict[str, Any], trajectory_id: str) -> None:
        prepared = self.prepared[item["id"]]
        if self._on_ray:
            use_on_ray(self.backend, trajectory_id, item["id"], prepared.options.workspace or FALLBACK_WORKDIR)
        else:
            HarborRunner.use(self.backend, trajectory_id, prepared)

    def loop_settings(self, item: Any) -> dict[str, Any]:
        """The task's ``[agent].timeout_sec`` bounds its rollout."""
        task = self.harbor_tasks[item["id"]]
        return {"rollout_timeout": min(self.config.rollout_timeout, task.config.agent.timeout_sec)}

    async def score_rollout(
        self, item: Any, result: AgentResult, ctx: Any, *, trajectory_id: str, workspace_meta: dict[str, Any]
    ) -> float | tuple[float, dict[str, Any]]:
        task = self.harbor_tasks[item["id"]]
        verified = await HarborRunner.verify(self.backend, trajectory_id, task, self.prepared[task.name])
        metadata = {"verifier_seconds": round(verified.seconds, 1)}
        if verified.error:
            metadata["verifier_error"] = verified.error
        return (verified.reward or 0.0), metadata

    async def compute_reward(self, item: Any, result: AgentResult, ctx: Any) -> float:
        raise NotImplementedError("harbor scores with score_rollout (the task's verifier)")

    def eval_metrics(self, outcomes: list[EvalOutcome]) -> dict[str, float]:
        return {}
