"""terminal_tasks: shell/file tasks with verifiable rewards (see env.py)."""

from hermes_env.envs.terminal_tasks.env import TerminalTasksConfig, TerminalTasksEnv

__all__ = ["TerminalTasksConfig", "TerminalTasksEnv"]
