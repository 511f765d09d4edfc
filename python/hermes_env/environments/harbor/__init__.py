"""harbor: Harbor-format tasks (Terminal-Bench 2's format) in local containers, offline.

``python -m hermes_env.environments.harbor oracle TASKS_DIR`` checks a task set with its reference solutions;
``export-tb2 TASKS_DIR OUT`` writes it as rows upstream's Terminal-Bench 2 environment loads;
``serve|process|evaluate`` run it as an environment (one container of the task's image per rollout).
"""

from hermes_env._lazy import lazy_attributes

__all__ = ["HarborEnv", "HarborEnvConfig"]

# Imported on first access, so that oracle and export-tb2 do not load the environment framework.
__getattr__ = lazy_attributes(__name__, {"hermes_env.environments.harbor.env": ("HarborEnv", "HarborEnvConfig")})
