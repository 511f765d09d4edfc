"""LLM judges: hindsight hints for distillation, rubric and group-ranking rewards; all through a chat server."""

from hermes_env.judges.chat import JudgeChat, JudgeError, chat_url

__all__ = ["JudgeChat", "JudgeError", "chat_url"]
