"""hermes-agent's docker-direct backend: a container per trajectory, from an image registered per trajectory.

:class:`DockerDirectBackend` is hermes_env's docker backend (Docker or podman; a container per
trajectory id, started at its first tool call, removed when the trajectory ends) with upstream's
``register_image(trajectory_id, image_tag)``. ``build_docker_image`` builds a task's Dockerfile
(context: the Dockerfile's folder; ``ARG HERMES_BASE_IMAGE`` / ``FROM ${HERMES_BASE_IMAGE}`` builds
on hermes_env's base image) through hermes_env's image cache and tags it; ``docker_image_exists``
asks the engine's local store. ``tool_pool_mode: docker_direct`` selects this backend
(``terminal_backend: docker``).
"""

from __future__ import annotations

import logging
from pathlib import Path

from hermes_env.backends.docker import DockerBackend
from hermes_env.containers.engine import detect_engine
from hermes_env.containers.images import ImageCache, ImageSpec
from hermes_env.errors import ContainerError

logger = logging.getLogger(__name__)

__all__ = ["DockerDirectBackend", "build_docker_image", "docker_image_exists"]


class DockerDirectBackend(DockerBackend):
    """hermes_env's docker backend with upstream's per-trajectory image registration."""

    def register_image(self, trajectory_id: str, image_tag: str) -> None:
        """Run ``trajectory_id``'s container from ``image_tag`` (before the trajectory's first tool call)."""
        self.use_image(trajectory_id, ImageSpec(image=image_tag))


def docker_image_exists(image_tag: str) -> bool:
    """Whether the engine (docker, else podman) has ``image_tag`` locally."""
    return detect_engine(None).image_id_sync(image_tag) is not None


async def build_docker_image(dockerfile: str | Path, image_tag: str, timeout_s: float = 600.0) -> bool:
    """Build ``dockerfile`` and tag the image ``image_tag``; False (the build log's end logged) when it fails."""
    path = Path(dockerfile).resolve()
    if not path.is_file():
        logger.error("cannot build %s: no Dockerfile at %s", image_tag, path)
        return False
    engine = detect_engine(None)
    try:
        built = await ImageCache(engine, build_timeout_s=timeout_s).resolve(ImageSpec(dockerfile=path))
        await engine.run("tag", built, image_tag)
    except ContainerError as err:
        logger.error("building %s from %s failed: %s", image_tag, path, err)
        return False
    return True
