"""The oracle as a policy: a task's reference solution sent as a ``terminal`` call, so the whole Phase-2 loop runs
on Harbor tasks with no model (``python -m hermes_env.environments.harbor demo TASKS_DIR``)."""

from __future__ import annotations

from typing import Any

from hermes_env.environments.harbor.export_tb2 import tar_b64
from hermes_env.environments.harbor.runner import SOLUTION_DIR
from hermes_env.environments.harbor.task import HarborTask


def oracle_command(task: HarborTask) -> str:
    """One shell command that does what Harbor's oracle agent does: ``solution/`` unpacked to ``/solution``,
    then ``bash /solution/solve.sh``."""
    if task.solution_dir is None:
        raise ValueError(f"task {task.name} has no solution/solve.sh")
    archive = tar_b64(task.solution_dir)
    return (
        f"mkdir -p {SOLUTION_DIR} && printf %s '{archive}' | base64 -d | tar -xzf - -C {SOLUTION_DIR} "
        f"&& bash {SOLUTION_DIR}/solve.sh"
    )


def scripted_rows(tasks: list[HarborTask]) -> list[dict[str, Any]]:
    """Rows a :class:`~hermes_env.testing.policies.SolutionPolicy` answers from (tasks with a solution)."""
    return [{"id": t.name, "prompt": t.instruction, "solution": oracle_command(t)} for t in tasks if t.solution_dir]
