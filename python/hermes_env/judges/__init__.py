"""LLM judges: hindsight hints for distillation, rubric and group-ranking rewards; all through a chat server."""

from hermes_env._renamed import old_names
from hermes_env.judges.chat import JudgeChat, chat_url

__all__ = ["JudgeChat", "chat_url"]


# Exceptions live in hermes_env.errors; the names this package once re-exported still work for a release
# (hermes_env._renamed.OLD_NAMES), each with a warning once.
__getattr__ = old_names(__name__)
