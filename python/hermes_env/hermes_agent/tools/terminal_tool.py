"""hermes-agent's ``tools.terminal_tool``: the sandbox of each task id, per-task image overrides, cleanup.

Upstream keeps one terminal environment per ``task_id`` and creates it on the first tool call; environment
files find it again by that id (``ToolContext(task_id)``, ``cleanup_vm(task_id)``) and choose its image
beforehand with ``register_task_env_overrides(task_id, {"modal_image": ...})``. Here the same registry holds,
per task id, a hermes_env :class:`~hermes_env.tool_context.ToolContext` on the backend of the running
environment (``--env.terminal_backend``), or, with no environment running, on a backend named by
``TERMINAL_ENV`` (as upstream reads it; ``local`` by default).

An image override (``docker_image``, ``modal_image``, ``singularity_image``: a registry name, or the path of a
Dockerfile, built with :mod:`hermes_env.containers`' image cache; one starting from upstream images is built on
local bases with the verifier toolbox, see :mod:`~hermes_env.hermes_agent.tools.upstream_task_images`) applies
on the ``docker`` backend; backends without images run the task without it, with one warning.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hermes_env.backends.base import ExecutionBackend
from hermes_env.containers.images import ImageSpec
from hermes_env.tool_context import ToolContext

logger = logging.getLogger(__name__)

#: Override keys that name the task's image, in the order they are looked at.
IMAGE_KEYS = ("docker_image", "modal_image", "singularity_image", "daytona_image")

_task_env_overrides: dict[str, dict[str, Any]] = {}
_contexts: dict[str, ToolContext] = {}
_lock = threading.Lock()
_warned_no_images: set[str] = set()


class _Settings:
    """Where task contexts come from: the running environment's backend, else one made from TERMINAL_ENV."""

    def __init__(self) -> None:
        self.backend_source: Callable[[], ExecutionBackend] | None = None
        self.timeout: float | None = None
        self.background_timeout: float = 3600.0
        self.on_context: Callable[[str, ToolContext], None] | None = None
        self.own_backend: ExecutionBackend | None = None


_settings = _Settings()


def use_environment(
    backend_source: Callable[[], ExecutionBackend],
    *,
    timeout: float,
    background_timeout: float,
    on_context: Callable[[str, ToolContext], None] | None = None,
) -> None:
    """Called by the running environment: task contexts use its backend and tool time limits."""
    _settings.backend_source = backend_source
    _settings.timeout = timeout
    _settings.background_timeout = background_timeout
    _settings.on_context = on_context


def release_environment() -> None:
    """Called when the running environment closes: later task contexts use a backend of their own again."""
    _settings.backend_source = None
    _settings.timeout = None
    _settings.on_context = None


def _backend() -> ExecutionBackend:
    if _settings.backend_source is not None:
        return _settings.backend_source()
    if _settings.own_backend is None:
        from hermes_env.backends import get_backend

        _settings.own_backend = get_backend(os.environ.get("TERMINAL_ENV", "local"))
    return _settings.own_backend


def register_task_env_overrides(task_id: str, overrides: dict[str, Any]) -> None:
    """Per-task sandbox settings, read when the task's sandbox is created (upstream's keys; see the module doc)."""
    if not isinstance(overrides, dict):
        raise TypeError(f"overrides must be a dict, got {type(overrides).__name__}")
    _task_env_overrides[task_id] = dict(overrides)


def clear_task_env_overrides(task_id: str) -> None:
    """Forget a task's overrides (its sandbox, if any, is left to ``cleanup_vm``)."""
    _task_env_overrides.pop(task_id, None)


def task_overrides(task_id: str) -> dict[str, Any]:
    return dict(_task_env_overrides.get(task_id, {}))


def image_override(task_id: str) -> ImageSpec | None:
    """The image a task's overrides name: a Dockerfile path when one exists there, else an image name."""
    overrides = _task_env_overrides.get(task_id, {})
    for key in IMAGE_KEYS:
        value = overrides.get(key)
        if isinstance(value, str) and value.strip():
            path = Path(value).expanduser()
            if path.is_file():
                return ImageSpec(dockerfile=path.resolve())
            if path.is_dir() and (path / "Dockerfile").is_file():
                return ImageSpec(dockerfile=(path / "Dockerfile").resolve())
            return ImageSpec(image=value.strip())
    return None


def apply_image_override(backend: ExecutionBackend, task_id: str, ctx: ToolContext) -> None:
    """Run the task's sandbox from its override's image, before its first use. A Dockerfile starting from upstream
    images (``FROM python:3.13-slim-bookworm``) is built on local bases, with the verifier toolbox that ``ctx``'s
    own commands then run with (:mod:`~hermes_env.hermes_agent.tools.upstream_task_images`)."""
    image = image_override(task_id)
    if image is None:
        return
    if backend.supports_images:
        if image.dockerfile is not None:
            from hermes_env.hermes_agent.tools.upstream_task_images import use_upstream_dockerfile

            if use_upstream_dockerfile(backend, task_id, image.dockerfile, ctx):
                return
        backend.use_image(task_id, image)  # type: ignore[attr-defined]
    elif backend.name not in _warned_no_images:
        _warned_no_images.add(backend.name)
        logger.warning(
            "task image %s (register_task_env_overrides) is not used: terminal_backend %r runs no images; "
            "tasks run in its sandbox with the host's tools (--env.terminal_backend docker runs the images)",
            image.describe(),
            backend.name,
        )


def _prune_closed() -> None:
    """Forget contexts already cleaned up (the environment cleans its rollouts' own; caller holds the lock)."""
    for task_id in [t for t, ctx in _contexts.items() if ctx._closed]:
        del _contexts[task_id]


def adopt_context(task_id: str, ctx: ToolContext) -> None:
    """Register a context the environment made for a rollout, so that ``ToolContext(task_id)`` finds it."""
    with _lock:
        _prune_closed()
        _contexts[task_id] = ctx


def forget_context(task_id: str) -> None:
    with _lock:
        _contexts.pop(task_id, None)


def task_context(task_id: str) -> ToolContext:
    """The task's context, created (with its image override applied) on first use."""
    with _lock:
        ctx = _contexts.get(task_id)
        if ctx is not None and not ctx._closed:
            return ctx
        _prune_closed()
        backend = _backend()
        kwargs: dict[str, Any] = {"background_timeout": _settings.background_timeout}
        if _settings.timeout is not None:
            kwargs["timeout"] = _settings.timeout
        if "cwd" in _task_env_overrides.get(task_id, {}):
            logger.debug("task %s: the cwd override is not applied; commands start in the workspace", task_id)
        ctx = ToolContext(task_id, backend, **kwargs)
        apply_image_override(backend, task_id, ctx)
        _contexts[task_id] = ctx
    if _settings.on_context is not None:
        _settings.on_context(task_id, ctx)
    return ctx


def has_task_context(task_id: str) -> bool:
    with _lock:
        return task_id in _contexts


def cleanup_vm(task_id: str, *, force: bool = False) -> None:
    """Destroy the task's sandbox and stop what runs in it (idempotent; ``force`` accepted as upstream's)."""
    with _lock:
        ctx = _contexts.pop(task_id, None)
    _forget_upstream_image(task_id)
    if ctx is not None:
        ctx.cleanup()


def _forget_upstream_image(task_id: str) -> None:
    from hermes_env.hermes_agent.tools.upstream_task_images import forget

    forget(task_id)


def cleanup_all_environments(*, force: bool = False) -> int:
    """Destroy every task's sandbox; the number destroyed."""
    with _lock:
        _prune_closed()
        task_ids = list(_contexts)
    for task_id in task_ids:
        try:
            cleanup_vm(task_id, force=force)
        except Exception:  # noqa: BLE001 - one failed cleanup must not keep the others alive
            logger.exception("cleanup of task %s failed", task_id)
    return len(task_ids)


async def cleanup_all_environments_async() -> int:
    """``cleanup_all_environments`` for a caller on the event loop (awaits each cleanup)."""
    with _lock:
        _prune_closed()
        contexts = list(_contexts.items())
        _contexts.clear()
    for task_id, ctx in contexts:
        _forget_upstream_image(task_id)
        try:
            await ctx.cleanup()
        except Exception:  # noqa: BLE001 - one failed cleanup must not keep the others alive
            logger.exception("cleanup of task %s failed", task_id)
    return len(contexts)


def get_active_environments_info() -> dict[str, Any]:
    with _lock:
        return {"count": len(_contexts), "task_ids": sorted(_contexts)}


def terminal_tool(
    command: str,
    background: bool = False,
    timeout: int | None = None,
    task_id: str | None = None,
    force: bool = False,
    workdir: str | None = None,
    check_interval: int | None = None,
    pty: bool = False,
) -> str:
    """Run a command in the task's sandbox: upstream's JSON ``{"output", "exit_code", "error"}``."""
    args: dict[str, Any] = {"command": command, "background": background}
    if timeout is not None:
        args["timeout"] = timeout
    if workdir is not None:
        args["workdir"] = workdir
    return str(task_context(task_id or "default").call_tool("terminal", args))


def check_terminal_requirements() -> bool:
    """Whether the terminal backend can be made (upstream's check)."""
    try:
        _backend()
    except Exception as err:  # noqa: BLE001 - any reason means "not available"
        logger.warning("terminal backend unavailable: %s", err)
        return False
    return True


def _close_own_backend() -> None:
    cleanup_all_environments(force=True)
    backend, _settings.own_backend = _settings.own_backend, None
    if backend is not None:
        from hermes_env.sync_bridge import HELPER

        HELPER.run(backend.aclose())


atexit.register(_close_own_backend)

__all__ = [
    "cleanup_all_environments",
    "cleanup_vm",
    "clear_task_env_overrides",
    "get_active_environments_info",
    "register_task_env_overrides",
    "terminal_tool",
]
