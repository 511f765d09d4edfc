"""terminal_tasks: shell/file tasks with verifiable rewards (see env.py)."""

from hermes_env.environments.terminal_tasks.env import TerminalTasksConfig, TerminalTasksEnv

__all__ = ["TerminalTasksConfig", "TerminalTasksEnv"]
