"""The one client every judge uses: ``POST <base>/v1/chat/completions`` on any OpenAI-compatible server."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import aiohttp

from hermes_env.errors import JudgeError

__all__ = ["JudgeChat", "chat_url"]


def chat_url(base_url: str) -> str:
    """``.../v1/chat/completions`` from ``http://host:port`` or ``http://host:port/v1``."""
    base = base_url.rstrip("/")
    return (base if base.endswith("/v1") else base + "/v1") + "/chat/completions"


class JudgeChat:
    """Chat completions from a judge model, at most ``max_concurrency`` requests at once."""

    def __init__(
        self,
        base_url: str,
        *,
        model: str = "default",
        max_tokens: int = 256,
        temperature: float = 0.7,
        timeout: float = 600.0,
        max_concurrency: int = 4,
    ) -> None:
        self.url = chat_url(base_url)
        self.model = model
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.timeout = timeout
        self._limit = asyncio.Semaphore(max_concurrency)

    async def complete(self, messages: Sequence[dict[str, Any]], n: int = 1) -> list[str]:
        """``n`` independent replies to ``messages`` (one request each, run concurrently)."""
        return list(await asyncio.gather(*(self._one(messages) for _ in range(n))))

    async def _one(self, messages: Sequence[dict[str, Any]]) -> str:
        body = {
            "model": self.model,
            "messages": [dict(m) for m in messages],
            "n": 1,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
        }
        async with self._limit:
            try:
                async with aiohttp.ClientSession() as session:
                    async with session.post(
                        self.url, json=body, timeout=aiohttp.ClientTimeout(total=self.timeout)
                    ) as resp:
                        if resp.status != 200:
                            text = await resp.text()
                            raise JudgeError(f"the judge at {self.url} answered HTTP {resp.status}: {text[:300]}")
                        answer = await resp.json(content_type=None)
            except (aiohttp.ClientError, TimeoutError, OSError, ValueError) as err:
                reason = f"{type(err).__name__}: {err}"
                raise JudgeError(f"the judge at {self.url} could not be asked: {reason}") from None
        try:
            content = answer["choices"][0]["message"].get("content")
        except (KeyError, IndexError, TypeError, AttributeError):
            shown = str(answer)[:200]
            raise JudgeError(f"the judge at {self.url} answered without choices[0].message: {shown}") from None
        return str(content or "")
