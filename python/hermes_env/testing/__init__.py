"""Test helpers: scripted stand-ins for inference servers (no model), scripted policies, a trainer stub.

The bundled Qwen3 tokenizer lives in :mod:`hermes_env.resources`; ``qwen3_tokenizer`` and
``qwen3_tokenizer_dir`` are re-exported here for tests.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hermes_env.resources import bundled_tokenizer_dir, qwen3_tokenizer

__all__ = ["ScriptedVLLMServer", "qwen3_tokenizer", "qwen3_tokenizer_dir"]


def qwen3_tokenizer_dir() -> Path:
    """Folder of the bundled Qwen3 tokenizer (``bundled:qwen3``)."""
    return bundled_tokenizer_dir("qwen3")


def __getattr__(name: str) -> Any:
    # The server pulls in aiohttp; import it only when asked for.
    if name == "ScriptedVLLMServer":
        from hermes_env.testing.scripted_vllm import ScriptedVLLMServer

        return ScriptedVLLMServer
    raise AttributeError(f"module 'hermes_env.testing' has no attribute {name!r}")
