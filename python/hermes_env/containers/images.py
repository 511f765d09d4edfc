"""Images: the local base image set-up makes, and per-task images built once and cached by content.

A task names its image in one of two ways:

- ``image``: any name the engine knows (a local tag, or with a reachable registry any ``repo:tag``);
- ``dockerfile``: a Dockerfile beside the environment (its directory is the build context). It is built once per
  content: the tag ``hermes_env/task:<hash>`` hashes the Dockerfile, every file of its context and the base
  image's id, so an edit (or a new base image) makes a new image and an unchanged recipe is never rebuilt.
  Recipes start ``ARG HERMES_BASE_IMAGE`` / ``FROM ${HERMES_BASE_IMAGE}`` to build on the base image. A recipe
  whose ``FROM`` names upstream images the default image map covers (``python:3.13-slim-bookworm``,
  ``debian:bookworm-slim``, ``ubuntu:24.04``, ...) is built on their local stand-ins by
  :class:`~hermes_env.containers.upstream_images.UpstreamImageBuilder`; any other ``FROM`` works where the engine
  can pull it.

Every image built here carries the label ``hermes_env`` (``base`` or ``task``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes_env.containers.engine import ContainerEngine
from hermes_env.containers.recipes import BASE_ARG, BASE_IMAGE, build_recipe, context_files
from hermes_env.errors import ContainerError, EngineCommandError, ImageUnavailableError

TASK_REPOSITORY = "hermes_env/task"
_HASH_VERSION = b"hermes_env task image v1\0"


@dataclass(frozen=True, slots=True)
class ImageSpec:
    """Where a task's container image comes from: a name (``image``) or a Dockerfile to build."""

    image: str | None = None
    dockerfile: Path | None = None

    def __post_init__(self) -> None:
        if (self.image is None) == (self.dockerfile is None):
            raise ValueError("an ImageSpec names exactly one of image or dockerfile")

    @property
    def context(self) -> Path:
        assert self.dockerfile is not None
        return self.dockerfile.parent

    @classmethod
    def from_item(cls, item: Any, base_dir: Path) -> ImageSpec | None:
        """The image an item (a task row) asks for, None when it asks for none.

        ``image`` is used as given; ``dockerfile`` is a path relative to ``base_dir`` (the task file's directory).
        """
        if not isinstance(item, Mapping):
            return None
        image, dockerfile = item.get("image"), item.get("dockerfile")
        task = item.get("id", "?")
        if image is not None and dockerfile is not None:
            raise ValueError(f"task {task!r} names both image and dockerfile; keep one")
        if image is not None:
            if not isinstance(image, str) or not image.strip():
                raise ValueError(f"task {task!r}: image must be a non-empty image name, got {image!r}")
            return cls(image=image.strip())
        if dockerfile is None:
            return None
        if not isinstance(dockerfile, str) or not dockerfile.strip():
            raise ValueError(f"task {task!r}: dockerfile must be a path to a Dockerfile, got {dockerfile!r}")
        path = (base_dir / dockerfile).resolve()
        if not path.is_file():
            raise ValueError(f"task {task!r}: dockerfile {dockerfile!r} does not exist (looked for {path})")
        return cls(dockerfile=path)

    def describe(self) -> str:
        return self.image if self.image is not None else f"Dockerfile {self.dockerfile}"


def recipe_hash(dockerfile: Path, base_image_id: str | None) -> str:
    """sha256 over the Dockerfile, every file of its context (path and bytes) and the base image's id."""
    h = hashlib.sha256(_HASH_VERSION)
    h.update((base_image_id or "").encode() + b"\0")
    context = dockerfile.parent
    h.update(dockerfile.relative_to(context).as_posix().encode() + b"\0")
    for path in context_files(context):
        data = path.read_bytes()
        h.update(path.relative_to(context).as_posix().encode() + b"\0")
        h.update(len(data).to_bytes(8, "big") + data)
        h.update(b"\1" if os.access(path, os.X_OK) else b"\0")
    return h.hexdigest()


def uses_base_image(dockerfile: Path) -> bool:
    return BASE_ARG in dockerfile.read_text(errors="replace")


class ImageCache:
    """Turns an :class:`ImageSpec` into an image the engine can run, building each recipe at most once.

    Concurrent rollouts asking for the same recipe wait for one build (an asyncio lock in this process, a file
    lock across processes); a recipe that failed to build fails every later request in this process at once,
    with the same message, instead of building again.
    """

    def __init__(
        self, engine: ContainerEngine, *, base_image: str = BASE_IMAGE, build_timeout_s: float = 900.0
    ) -> None:
        self.engine = engine
        self.base_image = base_image
        self.build_timeout_s = build_timeout_s
        self._locks: dict[str, asyncio.Lock] = {}
        self._resolved: dict[ImageSpec, str] = {}
        self._failed: dict[ImageSpec, ContainerError] = {}
        self._upstream: Any = None  # the UpstreamImageBuilder for upstream recipes, made on first use

    async def base(self) -> str:
        """The base image's id; a clear error when set-up has not made it."""
        image_id = await self.engine.image_id(self.base_image)
        if image_id is None:
            raise ImageUnavailableError(
                f"the base image {self.base_image} is missing from {self.engine.name}; make it with "
                "`bash scripts/setup.sh` (or `.venv/bin/python -m hermes_env.containers setup`)"
            )
        return image_id

    async def resolve(self, spec: ImageSpec | None) -> str:
        """The image reference to start a container from (the base image when ``spec`` is None)."""
        if spec is None:
            return await self.base()
        if spec in self._resolved:
            return self._resolved[spec]
        if spec in self._failed:
            raise self._failed[spec]
        lock = self._locks.setdefault(spec.describe(), asyncio.Lock())
        async with lock:
            if spec in self._resolved:
                return self._resolved[spec]
            if spec in self._failed:
                raise self._failed[spec]
            try:
                ref = await (self._named(spec.image) if spec.image is not None else self._built(spec))
            except ContainerError as exc:
                self._failed[spec] = exc
                raise
            self._resolved[spec] = ref
            return ref

    def upstream_builder(self) -> Any:
        """This cache's :class:`~hermes_env.containers.upstream_images.UpstreamImageBuilder` (one, so that its
        local bases are made once and its parallel-build bound holds)."""
        if self._upstream is None:
            from hermes_env.containers.upstream_images import UpstreamImageBuilder

            self._upstream = UpstreamImageBuilder(self.engine, build_timeout_s=self.build_timeout_s)
        return self._upstream

    async def _named(self, image: str) -> str:
        if await self.engine.image_id(image) is not None:
            return image
        result = await self.engine.run("pull", "-q", image, check=False, timeout=self.build_timeout_s)
        if result.returncode != 0:
            raise ImageUnavailableError(
                f"image {image!r} is not in {self.engine.name}'s local store and pulling it failed "
                f"({result.err[-300:] or 'no output'}); build it locally or give the task a dockerfile"
            )
        return image

    async def _built(self, spec: ImageSpec) -> str:
        assert spec.dockerfile is not None
        if not uses_base_image(spec.dockerfile):
            from hermes_env.containers.upstream_images import is_upstream_recipe

            if await asyncio.to_thread(is_upstream_recipe, spec.dockerfile):
                return str(await self.upstream_builder().build(spec.context, dockerfile=spec.dockerfile))
        base_id = await self.base() if uses_base_image(spec.dockerfile) else None
        digest = await asyncio.to_thread(recipe_hash, spec.dockerfile, base_id)
        tag = f"{TASK_REPOSITORY}:{digest[:24]}"
        await self.build_recipe(spec.dockerfile, spec.context, tag, digest, base_id)
        return tag

    async def build_recipe(
        self,
        dockerfile: Path,
        context: Path,
        tag: str,
        digest: str,
        base_id: str | None = None,
        *,
        timeout_s: float | None = None,
    ) -> None:
        """:func:`~hermes_env.containers.recipes.build_recipe` on this cache's engine; ``timeout_s`` replaces the
        cache's ``build_timeout_s`` for this build."""
        limit = self.build_timeout_s if timeout_s is None else timeout_s
        await build_recipe(self.engine, dockerfile, context, tag, digest, base_id, timeout_s=limit)


async def remove_images(engine: ContainerEngine, *refs: str) -> None:
    """Remove images (tests, benches); an image already gone is not an error."""
    if refs:
        with contextlib.suppress(EngineCommandError):
            await engine.run("rmi", "-f", *refs, check=False)
