"""Fixtures for the env tests (the helpers live in env_fixtures.py)."""

from env_fixtures import make_env  # noqa: F401 - re-exported as a fixture
