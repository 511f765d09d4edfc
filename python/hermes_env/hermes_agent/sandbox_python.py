"""A ``python`` command for bubblewrap sandboxes, as upstream's sandbox images (``python:3.11-slim``) have one.

Both fronts (``environments`` and ``atropos``) give it to their bwrap sandboxes: where the sandbox's PATH has
only ``python3``, a folder holding a ``python`` link to it is mounted read-only and put first on PATH.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from hermes_env.isolation.bubblewrap import SANDBOX_PATH

__all__ = ["python_shim", "shared_dir", "with_python_command"]


def shared_dir(name: str) -> Path:
    """A folder under the temporary directory that the sandbox user can read (a home folder is often closed)."""
    base = Path(tempfile.gettempdir()) / f"hermes_env-{name}-{os.getuid()}"
    base.mkdir(mode=0o755, exist_ok=True)
    return base


def python_shim() -> Path | None:
    """A folder holding ``python`` (python3), where the sandbox's PATH has no ``python``; None where it has."""
    if shutil.which("python", path=SANDBOX_PATH) is not None:
        return None
    python3 = shutil.which("python3", path=SANDBOX_PATH)
    if python3 is None:
        return None
    base = shared_dir("python-shim")
    link = base / "python"
    if not link.is_symlink():
        link.symlink_to(python3)
    return base


def with_python_command(options: dict[str, Any]) -> dict[str, Any]:
    """bwrap backend options with the ``python`` folder mounted and first on PATH (unchanged where the sandbox
    has ``python`` already, or where the options set PATH themselves)."""
    env = dict(options.get("env") or {})
    shim = python_shim()
    if shim is None or "PATH" in env:
        return options
    env["PATH"] = f"{shim}:{SANDBOX_PATH}"
    return {**options, "ro_paths": [*options.get("ro_paths", ()), str(shim)], "env": env}
