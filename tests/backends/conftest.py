"""Backends under test: every test taking ``backend`` runs on ``local`` and on ``bwrap``."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from hermes_env.backends import ExecutionBackend, get_backend
from hermes_env.backends.bwrap import bwrap_problem

BWRAP_PROBLEM = bwrap_problem()
needs_bwrap = pytest.mark.skipif(BWRAP_PROBLEM is not None, reason=f"bubblewrap unusable here: {BWRAP_PROBLEM}")


@pytest.fixture
def ws_root() -> Iterator[Path]:
    """A workspace root the sandbox uid can reach (pytest's tmp_path sits under a 0700 directory)."""
    root = Path(tempfile.mkdtemp(prefix="hermes-test-"))
    root.chmod(0o711)
    yield root / "ws"
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(params=["local", pytest.param("bwrap", marks=needs_bwrap)])
async def backend(request: pytest.FixtureRequest, ws_root: Path) -> AsyncIterator[ExecutionBackend]:
    b = get_backend(request.param, root=ws_root)
    yield b
    await b.aclose()


@pytest.fixture
async def bwrap(ws_root: Path) -> AsyncIterator[ExecutionBackend]:
    if BWRAP_PROBLEM is not None:
        pytest.skip(f"bubblewrap unusable here: {BWRAP_PROBLEM}")
    b = get_backend("bwrap", root=ws_root, cpu_seconds=20, max_processes=64)
    yield b
    await b.aclose()
