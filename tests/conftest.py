"""Shared fixtures: the vLLM conformance corpus beside the clone, hypothesis profiles."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

REPO = Path(__file__).resolve().parents[1]
CONFORMANCE_DIR = Path(os.environ.get("HERMES_CONFORMANCE_DIR", REPO.parent / "shared" / "conformance"))

settings.register_profile("dev", max_examples=200, deadline=None)
settings.register_profile(
    "ci", max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
settings.register_profile("slow", max_examples=5000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


def load_conformance(parser: str) -> list[dict[str, Any]]:
    """Every recorded case for ``parser``; skips (saying why) when the corpus is absent."""
    path = CONFORMANCE_DIR / f"{parser}.jsonl"
    if not CONFORMANCE_DIR.is_dir():
        pytest.skip(f"conformance corpus not found at {CONFORMANCE_DIR} (CI keeps ../shared beside the clone)")
    if not path.is_file():
        pytest.skip(f"no conformance file {path.name} in {CONFORMANCE_DIR}")
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]
