"""Test helpers: scripted stand-ins for inference servers (no model), scripted policies, a trainer stub.

The bundled Qwen3 tokenizer lives in :mod:`hermes_env.resources`; ``qwen3_tokenizer`` and
``qwen3_tokenizer_dir`` are re-exported here for tests.
"""

from __future__ import annotations

from pathlib import Path

from hermes_env._lazy import lazy_attributes
from hermes_env.resources import bundled_tokenizer_dir, qwen3_tokenizer

__all__ = ["ScriptedVLLMServer", "qwen3_tokenizer", "qwen3_tokenizer_dir"]


def qwen3_tokenizer_dir() -> Path:
    """Folder of the bundled Qwen3 tokenizer (``bundled:qwen3``)."""
    return bundled_tokenizer_dir("qwen3")


# The server pulls in aiohttp; imported only when asked for.
__getattr__ = lazy_attributes(__name__, {"hermes_env.testing.scripted_vllm": ("ScriptedVLLMServer",)})
