"""Example environments, each runnable as ``python -m hermes_env.environments.<name> serve|process|evaluate``.

- ``terminal_tasks``: shell/file tasks with verifiable checks run in the rollout's sandbox;
  ``python -m hermes_env.environments.terminal_tasks demo`` runs it end to end against a scripted server.
- ``swe_lite``: small Python repositories with a bug; reward from hidden tests run in the sandbox.
- ``bench_eval``: evaluation only; writes ``metrics.json`` and ``samples.jsonl``.
"""

from __future__ import annotations

from hermes_env.env.cli import configure_logging
from hermes_env.env.defaults import DEFAULT_MODEL, default_tokenizer_name

__all__ = ["DEFAULT_MODEL", "configure_logging", "default_tokenizer_name"]
