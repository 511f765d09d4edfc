"""The container tests: every test here is marked ``containers`` (real containers; tests/conftest.py skips them
where none can run and checks that each leaves none behind)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hermes_env.containers import ContainerEngine, detect_engine


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = str(Path(__file__).parent)
    for item in items:
        if str(item.path).startswith(here):
            item.add_marker(pytest.mark.containers)


@pytest.fixture
def engine() -> ContainerEngine:
    return detect_engine(None)
