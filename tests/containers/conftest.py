"""Fixtures for the container tests: the engine set-up configured, real containers, and a check that every test
leaves none of this process's containers behind."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hermes_env.containers import BASE_IMAGE, ContainerEngine, ContainerError, detect_engine
from hermes_env.containers.engine import OWNER_LABEL, owner_token, scratch_dir


def _engine_problem() -> str | None:
    try:
        engine = detect_engine(None)
    except ContainerError as exc:
        return str(exc)
    if engine.image_id_sync(BASE_IMAGE) is None:
        return f"the base image {BASE_IMAGE} is missing; run `bash scripts/setup.sh`"
    return None


ENGINE_PROBLEM = _engine_problem()


@pytest.fixture(autouse=True)
def _require_engine() -> None:
    if ENGINE_PROBLEM is not None:
        pytest.skip(f"no usable container engine: {ENGINE_PROBLEM}")


@pytest.fixture
def engine() -> ContainerEngine:
    return detect_engine(None)


def my_containers(engine: ContainerEngine) -> list[str]:
    """Containers (any state) owned by this test process."""
    return engine.run_sync("ps", "-aq", "--filter", f"label={OWNER_LABEL}={owner_token()}").text.split()


@pytest.fixture(autouse=True)
def _no_container_left(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if ENGINE_PROBLEM is None:
        engine = detect_engine(None)
        left = my_containers(engine)
        engine.remove_sync(left)
        assert not left, f"{request.node.name} left {len(left)} container(s) behind"
        channels = list(scratch_dir().glob("channels-*"))
        assert not channels, f"{request.node.name} left channel directories behind: {channels}"
