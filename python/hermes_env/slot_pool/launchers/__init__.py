"""Worker launchers: how the pool's sandbox workers are started (``PoolConfig.launcher``).

``local`` runs each worker as a child process; ``ray`` runs it as a Ray actor on a cluster node;
``container`` runs it in a container of its own on a docker/podman engine (its slots share that container).
The names and their classes are listed in ``hermes_env.slot_pool.config.LAUNCHERS``.
"""

from __future__ import annotations

from hermes_env._lazy import import_reference
from hermes_env._renamed import old_names
from hermes_env.slot_pool.config import LAUNCHERS, PoolConfig
from hermes_env.slot_pool.launchers.base import WorkerHandle, WorkerLauncher, WorkerSpec

__all__ = ["WorkerHandle", "WorkerLauncher", "WorkerSpec", "create_launcher"]


def create_launcher(config: PoolConfig) -> WorkerLauncher:
    """The launcher ``config.launcher`` names, built from the pool's config."""
    cls: type[WorkerLauncher] = import_reference(LAUNCHERS[config.launcher], f"launcher {config.launcher!r}")
    return cls(config)  # type: ignore[call-arg]


# Exceptions live in hermes_env.errors; the names this package once re-exported still work for a release
# (hermes_env._renamed.OLD_NAMES), each with a warning once.
__getattr__ = old_names(__name__)
