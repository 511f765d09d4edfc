"""A rollout context on the slot pool (``terminal_backend: sandbox``) for the tools that need its shells."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from hermes_env.backends import get_backend
from hermes_env.tools import ToolCallContext

from tests.slot_pool.conftest import BWRAP_PROBLEM


@pytest.fixture
async def pool_ctx(ws_root: Path) -> AsyncIterator[ToolCallContext]:
    if BWRAP_PROBLEM is not None:
        pytest.skip(f"bubblewrap unusable here: {BWRAP_PROBLEM}")
    backend = get_backend("sandbox", slots_per_worker=2, max_workers=1, root_dir=str(ws_root))
    yield ToolCallContext("pooled", backend, timeout=10, max_timeout=20, background_timeout=60)
    await backend.cleanup("pooled")
    await backend.aclose()
