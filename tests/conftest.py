"""Shared fixtures: the vLLM conformance corpus kept in ``tests/data/conformance``, hypothesis profiles.

The default hypothesis profile (``ci``) is derandomized, so ``bash scripts/test.sh`` passes or fails the same
way on every run and machine; random exploration is a separate command (README, "Tests"):
``HYPOTHESIS_PROFILE=explore .venv/bin/python -m pytest --timeout 0 tests/parsers``.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from hermes_env.backends import ExecutionBackend, get_backend
from hermes_env.isolation import bwrap_problem
from hypothesis import HealthCheck, settings

REPO = Path(__file__).resolve().parents[1]
CONFORMANCE_DIR = Path(os.environ.get("HERMES_CONFORMANCE_DIR", REPO / "tests" / "data" / "conformance"))

settings.register_profile(
    "ci", max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
# Random seeds, more examples: finds new cases; a failure it finds becomes an @example regression case.
settings.register_profile("explore", max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("slow", max_examples=5000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def load_conformance(parser: str) -> list[dict[str, Any]]:
    """Every recorded case for ``parser``; skips (saying why) when the corpus is absent."""
    path = CONFORMANCE_DIR / f"{parser}.jsonl"
    if not CONFORMANCE_DIR.is_dir():
        pytest.fail(f"conformance corpus not found at {CONFORMANCE_DIR} (it ships in tests/data/conformance)")
    if not path.is_file():
        pytest.skip(f"no conformance file {path.name} in {CONFORMANCE_DIR}")
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


# -- execution backends: a test taking ``backend`` runs on ``local`` and on ``bwrap`` ----------------------------

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
