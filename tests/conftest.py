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


# -- containers: tests marked ``containers`` start real ones, and are skipped (saying why) where none can run -----

CONTAINER_PROBLEM: str | None = None


def pytest_configure(config: pytest.Config) -> None:
    global CONTAINER_PROBLEM
    from hermes_env.containers.setup import readiness_problem

    CONTAINER_PROBLEM = readiness_problem()


def pytest_runtest_setup(item: pytest.Item) -> None:
    if CONTAINER_PROBLEM is not None and item.get_closest_marker("containers") is not None:
        pytest.skip(f"no usable container engine: {CONTAINER_PROBLEM}")


@pytest.fixture(autouse=True)
def _no_container_left(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test that starts containers leaves none of this process's behind (nor their channel directories)."""
    yield
    if CONTAINER_PROBLEM is None and request.node.get_closest_marker("containers") is not None:
        from hermes_env.containers import detect_engine
        from hermes_env.containers.engine import OWNER_LABEL, owner_token
        from hermes_env.isolation.roots import LOCK_NAME

        engine = detect_engine(None)
        left = engine.run_sync("ps", "-aq", "--filter", f"label={OWNER_LABEL}={owner_token()}").text.split()
        engine.remove_sync(left)
        assert not left, f"{request.node.name} left {len(left)} container(s) behind"
        mine = f"{os.getpid()}\n"
        roots = [p for p in Path(tempfile.gettempdir()).glob("hermes-docker-*") if _read(p / LOCK_NAME) == mine]
        assert not roots, f"{request.node.name} left its channel directories behind: {roots}"


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


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


BACKENDS = ["local", pytest.param("bwrap", marks=needs_bwrap), pytest.param("docker", marks=pytest.mark.containers)]


@pytest.fixture(params=BACKENDS)
async def backend(request: pytest.FixtureRequest, ws_root: Path) -> AsyncIterator[ExecutionBackend]:
    # docker keeps each workspace inside its container: there is no host root to give it.
    options = {"memory_bytes": "512MiB"} if request.param == "docker" else {"root": ws_root}
    b = get_backend(request.param, **options)
    yield b
    await b.aclose()


@pytest.fixture
async def bwrap(ws_root: Path) -> AsyncIterator[ExecutionBackend]:
    if BWRAP_PROBLEM is not None:
        pytest.skip(f"bubblewrap unusable here: {BWRAP_PROBLEM}")
    b = get_backend("bwrap", root=ws_root, cpu_seconds=20, max_processes=64)
    yield b
    await b.aclose()
