"""Building an image recipe (a Dockerfile and its context) once, across processes, with a time limit and a log.

The names of the images this project makes live here too, so that set-up, the task image cache and the
upstream image builder share them without importing each other.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import signal
import time
from pathlib import Path

from hermes_env.containers.engine import LABEL, ContainerEngine
from hermes_env.errors import ImageBuildError

__all__ = ["BASE_ARG", "BASE_IMAGE", "CONTENT_LABEL", "build_recipe", "cache_dir", "context_files"]

#: The image tasks without an image of their own run in; ``python -m hermes_env.containers setup`` makes it.
BASE_IMAGE = "hermes_env/base:bookworm"
#: The build argument a task's Dockerfile reads to start from the base image.
BASE_ARG = "HERMES_BASE_IMAGE"
CONTENT_LABEL = "hermes_env.content"


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "hermes_env" / "images"


def context_files(context: Path) -> list[Path]:
    """Every file under ``context``, in a stable order (what a content hash reads)."""
    files = []
    for dirpath, dirnames, filenames in os.walk(context):
        dirnames.sort()
        for name in sorted(filenames):
            files.append(Path(dirpath) / name)
    return files


async def build_recipe(
    engine: ContainerEngine,
    dockerfile: Path,
    context: Path,
    tag: str,
    digest: str,
    base_id: str | None = None,
    *,
    timeout_s: float,
) -> None:
    """Build ``dockerfile`` (in ``context``) as ``tag`` unless the engine has it; one build per tag at a time
    across processes (a file lock: another process building it is waited for, then its image is used)."""
    if await engine.image_id(tag) is not None:
        return
    cache = cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    lock_fd = os.open(cache / f"{digest[:24]}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        await asyncio.to_thread(fcntl.flock, lock_fd, fcntl.LOCK_EX)
        if await engine.image_id(tag) is not None:
            return
        await _build(engine, dockerfile, tag, digest, base_id, cache / f"{digest[:24]}.log", context, timeout_s)
    finally:
        os.close(lock_fd)  # drops the flock


async def _build(
    engine: ContainerEngine,
    dockerfile: Path,
    tag: str,
    digest: str,
    base_id: str | None,
    log_path: Path,
    context: Path,
    limit: float,
) -> None:
    args = [
        "build",
        "--label", f"{LABEL}=task",
        "--label", f"{CONTENT_LABEL}={digest}",
        "-t", tag,
        "-f", str(dockerfile),
    ]  # fmt: skip
    if base_id is not None:
        args += ["--build-arg", f"{BASE_ARG}={base_id}"]
    args.append(str(context))
    started = time.monotonic()
    with log_path.open("wb") as log:
        proc = await asyncio.create_subprocess_exec(
            *engine.argv(*args),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            env=dict(engine.env),
            start_new_session=True,
        )
        try:
            await asyncio.wait_for(proc.wait(), limit)
        except (TimeoutError, asyncio.CancelledError) as exc:
            await _stop_build(proc)
            if isinstance(exc, asyncio.CancelledError):
                raise
            raise ImageBuildError(
                f"building {dockerfile} did not finish within {limit:g}s (log: {log_path}); "
                "make the recipe faster or raise image_build_timeout_s"
            ) from None
    if proc.returncode != 0:
        tail = log_path.read_text(errors="replace")[-1500:].strip()
        raise ImageBuildError(
            f"the image recipe {dockerfile} failed to build (exit {proc.returncode} after "
            f"{time.monotonic() - started:.0f}s); fix the Dockerfile. The build log ({log_path}) ends with:\n{tail}"
        )


async def _stop_build(proc: asyncio.subprocess.Process) -> None:
    """Stop a build: SIGTERM first (the engine then removes its build containers), SIGKILL if it lingers."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        await asyncio.wait_for(asyncio.shield(proc.wait()), 15)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
