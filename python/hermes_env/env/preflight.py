"""Checking that the inference server answers before a run starts.

atroposlib's server classes poll a health endpoint in the background and, while it fails,
wait forever before each request; a wrong ``--openai.base_url`` then looks like a hung run.
This check probes each configured server once (retrying for a short grace period, for a
server that is still starting) and fails with a message saying what to fix.
"""

from __future__ import annotations

import asyncio
import logging
import time

import aiohttp
from atroposlib.envs.server_handling.server_manager import ServerManager

from hermes_env.errors import InferenceServerUnreachable

logger = logging.getLogger(__name__)


def probe_url(base_url: str, server_type: str) -> str:
    """The endpoint that proves the server is up: /health for vLLM/SGLang, /models for OpenAI APIs."""
    base = base_url.rstrip("/")
    if server_type in ("vllm", "sglang", "trl"):
        return base.removesuffix("/v1") + "/health"
    return base + "/models"


async def check_servers(
    server: ServerManager, *, wait: float | None = 10.0, interval: float = 0.5, remind_every: float = 30.0
) -> None:
    """Raise :class:`InferenceServerUnreachable` unless every configured server answers within ``wait`` seconds.

    ``wait=None`` waits as long as it takes (``serve``: the inference server may still be loading
    a model), logging a warning every ``remind_every`` seconds so the wait is visible.
    """
    for api_server in server.servers:
        config = getattr(api_server, "config", None)
        base_url = getattr(config, "base_url", None)
        if config is None or not base_url:
            continue  # test harness, or the default OpenAI endpoint
        url = probe_url(base_url, getattr(config, "server_type", "openai"))
        headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
        started = time.monotonic()
        deadline = None if wait is None else started + wait
        next_reminder = started + remind_every
        last_error = "no answer"
        while True:
            try:
                async with aiohttp.ClientSession() as session:
                    async with session.get(url, headers=headers, timeout=aiohttp.ClientTimeout(total=5)) as resp:
                        if resp.status < 500 and resp.status not in (404, 405):
                            break
                        last_error = f"HTTP {resp.status}"
            except (aiohttp.ClientError, TimeoutError, OSError) as err:
                last_error = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
            now = time.monotonic()
            if deadline is None and now >= next_reminder:
                logger.warning("still waiting for the inference server at %s (%s: %s)", base_url, url, last_error)
                next_reminder = now + remind_every
            if deadline is not None and now >= deadline:
                raise InferenceServerUnreachable(
                    f"cannot reach the inference server at {base_url} (probed {url}: {last_error}); start the server "
                    "or pass the right --openai.base_url and --openai.server_type"
                )
            await asyncio.sleep(interval)
