"""LLM judges: hindsight hints for distillation, rubric and group-ranking rewards; all through a chat server."""

from hermes_env._lazy import lazy_attributes
from hermes_env.judges.chat import JudgeChat, chat_url

__all__ = ["JudgeChat", "chat_url"]


# Exceptions live in hermes_env.errors; the names this package once re-exported still work, with a warning once.
__getattr__ = lazy_attributes(__name__, {}, moved={"hermes_env.errors": ("JudgeError",)})
