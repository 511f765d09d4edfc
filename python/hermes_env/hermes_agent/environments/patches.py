"""hermes-agent's ``environments.patches``: ``apply_patches()``, which changes nothing on hermes_env.

Upstream's ``apply_patches()`` monkey-patches mini-swe-agent's ``SwerexModalEnvironment`` (``__init__``,
``execute``, ``stop``) to run its async Modal calls on a background event-loop thread, because that class calls
``asyncio.run()`` and so cannot run inside Atropos's event loop; its hermes_base_env calls it at import.

hermes_env has nothing that needs it: Modal is not a backend here (a ported environment's ``modal`` terminal
backend is refused at start, naming ``--env.terminal_backend docker|bwrap``), and a synchronous ``ToolContext``
call made inside the event loop already runs on a helper loop in a dedicated thread (README, "Synchronous
ToolContext calls"). So ``apply_patches()`` patches no class and imports no module; it exists so that upstream
code calling it runs unchanged, and, as upstream's, it may be called any number of times.
"""

from __future__ import annotations

import logging

__all__ = ["apply_patches"]

logger = logging.getLogger(__name__)

_patches_applied = False


def apply_patches() -> None:
    """Upstream's entry point for its async-safety patches; on hermes_env there is nothing to patch (see the
    module docstring). Idempotent: the first call logs (debug) that nothing was patched, later calls do nothing."""
    global _patches_applied
    if _patches_applied:
        return
    _patches_applied = True
    logger.debug(
        "apply_patches(): nothing to patch on hermes_env (no Modal backend; synchronous ToolContext calls already "
        "run on a helper loop thread)"
    )
