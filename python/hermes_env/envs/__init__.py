"""Example environments, each runnable as ``python -m hermes_env.envs.<name> serve|process|evaluate``.

- ``terminal_tasks``: shell/file tasks with verifiable checks run in the rollout's sandbox;
  ``python -m hermes_env.envs.terminal_tasks demo`` runs it end to end against a scripted server.
- ``swe_lite``: small Python repositories with a bug; reward from hidden tests run in the sandbox.
- ``bench_eval``: evaluation only; writes ``metrics.json`` and ``samples.jsonl``.
"""

from __future__ import annotations

import logging
import os

from hermes_env.env.defaults import DEFAULT_MODEL, default_tokenizer_name

__all__ = ["DEFAULT_MODEL", "configure_logging", "default_tokenizer_name"]


def configure_logging() -> None:
    """Warnings and errors only (``HERMES_LOG_LEVEL=INFO`` for more), so the progress bar stays readable.

    atroposlib sets its base-env logger to DEBUG itself; it is brought down to the same level.
    """
    level = os.environ.get("HERMES_LOG_LEVEL", "WARNING").upper()
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    for name in ("atroposlib", "atroposlib.envs.base", "httpx"):
        logging.getLogger(name).setLevel(level)
