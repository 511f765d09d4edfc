"""hermes-agent's ``environments.patches``: ``apply_patches()``.

Upstream patches its Modal backend so that synchronous tools do not deadlock inside Atropos's event loop.
hermes_env's tools are coroutines and its synchronous ``ToolContext`` calls run on a helper loop
(:mod:`hermes_env.sync_bridge`), so there is nothing to patch: calling it is safe and changes nothing.
"""

from __future__ import annotations


def apply_patches() -> None:
    """Nothing to patch here (see the module doc); kept so that upstream files calling it run unchanged."""


__all__ = ["apply_patches"]
