"""harbor: Harbor-format tasks (Terminal-Bench 2's format) in local containers, offline.

``python -m hermes_env.envs.harbor oracle TASKS_DIR`` checks a task set with its reference solutions;
``export-tb2 TASKS_DIR OUT`` writes it as rows upstream's Terminal-Bench 2 environment loads;
``serve|process|evaluate`` run it as an environment (one container of the task's image per rollout).
"""
