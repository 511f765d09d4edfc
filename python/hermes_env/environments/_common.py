"""What the shipped example environments share: a task file cycled in a seeded order, a setup command per task.

Each example differs only in its defaults, the fields its rows must carry, how a workspace is
prepared and how a rollout is scored; the loading, validation, ordering and evaluation live here.

An example's defaults live in one place, the field defaults of its config class. The ``config.yaml``
beside it repeats them for the reader and adds only the run's deployment (:data:`DEPLOYMENT_KEYS`: where
tools run, where output goes, wandb) and the inference server; a test holds the two together.
"""

from __future__ import annotations

import logging
import random
from pathlib import Path
from typing import Any, ClassVar

from hermes_env.env.base_env import HermesAgentBaseEnv
from hermes_env.env.dataset import load_rows
from hermes_env.env.defaults import default_server_config, default_tokenizer_name
from hermes_env.env.run_modes import EvalOutcome
from hermes_env.errors import DatasetError, RolloutFailed

logger = logging.getLogger(__name__)

#: ``env:`` keys of a shipped config.yaml that pick the run's deployment rather than the task's defaults, so may
#: differ from the config class's defaults.
DEPLOYMENT_KEYS = frozenset(
    {
        "terminal_backend",
        "terminal_backend_options",
        "tool_pool_size",
        "max_eval_workers",
        "use_wandb",
        "include_messages",
        "data_path_to_save_groups",
        "data_dir_to_save_evals",
    }
)


class TaskFileEnv(HermesAgentBaseEnv):
    """A HermesAgentBaseEnv over the rows of one task file (``dataset_name``), cycled in a seed-shuffled order."""

    #: The task file used when ``dataset_name`` is unset.
    default_tasks_path: ClassVar[Path]
    #: Fields every row must carry (besides ``prompt_field``, which ``load_rows`` checks).
    required_fields: ClassVar[tuple[str, ...]] = ("id",)
    #: Request timeout of the default inference server, in seconds.
    server_timeout: ClassVar[float] = 120

    tasks: list[dict[str, Any]]

    @classmethod
    def config_init(cls) -> tuple[Any, list[Any]]:
        # The environment's defaults are its config class's field defaults (their one home); only what
        # depends on the run is set here.
        config = cls.env_config_cls(tokenizer_name=default_tokenizer_name(), use_wandb=False, wandb_name=cls.name)
        return config, [default_server_config(timeout=cls.server_timeout)]

    async def setup(self) -> None:
        source = self.config.dataset_name or str(self.default_tasks_path)
        self.tasks = load_rows(source, self.config.dataset_split, self.config.prompt_field)
        for index, task in enumerate(self.tasks):
            missing = [key for key in self.required_fields if key not in task]
            if missing:
                raise DatasetError(
                    f"{self.name} task {task.get('id', index)!r} in {source} lacks the field(s) {missing}; "
                    "add them to the row or point --env.dataset_name at a file in this environment's format"
                )
            try:
                self.task_image(task)
            except ValueError as exc:
                raise DatasetError(f"{self.name} task file {source}: {exc}") from None
            self.validate_task(task)
        self.tasks = self._runnable(self.tasks)
        self._order = list(range(len(self.tasks)))
        random.Random(self.config.seed).shuffle(self._order)
        self._cursor = 0

    def task_images_dir(self) -> Path:
        """A task's ``dockerfile`` is relative to its task file's directory."""
        source = Path(self.config.dataset_name or self.default_tasks_path)
        return source.parent if source.is_file() else Path.cwd()

    def _runnable(self, tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The tasks this backend can run: those naming a container image need one that runs images."""
        if self.backend.supports_images:
            return tasks
        kept = [task for task in tasks if self.task_image(task) is None]
        if len(kept) < len(tasks):
            logger.warning(
                "%s: skipping %d of %d tasks that need their own container image: terminal_backend %r runs no "
                "images (use --env.terminal_backend docker to run them)",
                self.name,
                len(tasks) - len(kept),
                len(tasks),
                self.config.terminal_backend,
            )
        if not kept:
            raise DatasetError(
                f"every {self.name} task needs a container image, but terminal_backend "
                f"{self.config.terminal_backend!r} runs no images; use --env.terminal_backend docker"
            )
        return kept

    def validate_task(self, task: dict[str, Any]) -> None:
        """Further checks of one row at setup (default: none); raise DatasetError saying what to fix."""

    async def get_next_item(self) -> dict[str, Any]:
        task = self.tasks[self._order[self._cursor % len(self._order)]]
        self._cursor += 1
        return task

    def format_prompt(self, item: dict[str, Any]) -> str:
        return str(item[self.config.prompt_field])

    async def run_setup_command(self, item: dict[str, Any], exec_tool: Any, timeout: float) -> None:
        """Run the row's ``setup`` shell command (if any) in the rollout's workspace; RolloutFailed if it fails."""
        setup = item.get("setup")
        if not setup:
            return
        result = await exec_tool.terminal(setup, timeout=timeout)
        if not result.ok:
            raise RolloutFailed(
                f"{self.name}: setup of task {item['id']!r} failed (exit {result.exit_code}): {result.output[-500:]}",
                "workspace_setup_failed",
            )

    def eval_metrics(self, outcomes: list[EvalOutcome]) -> dict[str, float]:
        """Environment-specific metrics over ``evaluate``'s outcomes (default: none)."""
        return {}

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        """Every task once; success rate and agent statistics, saved with ``evaluate_log``."""
        if not hasattr(self, "tasks"):
            await self.setup()
        return await self.evaluate_items(self.tasks, extra_metrics=self.eval_metrics)
