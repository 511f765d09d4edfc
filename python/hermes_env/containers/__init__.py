"""Containers: a Docker-compatible engine (docker or podman) driven through its command line, the local base
image, and per-task images built once and cached by content. The ``docker`` backend runs rollouts in them."""

from hermes_env.containers.engine import LABEL, ContainerEngine, detect_engine, sweep_leftovers
from hermes_env.containers.images import BASE_IMAGE, ImageCache, ImageSpec
from hermes_env.errors import ContainerError, EngineUnavailableError, ImageBuildError, ImageUnavailableError

__all__ = [
    "BASE_IMAGE",
    "LABEL",
    "ContainerEngine",
    "ContainerError",
    "EngineUnavailableError",
    "ImageBuildError",
    "ImageCache",
    "ImageSpec",
    "ImageUnavailableError",
    "detect_engine",
    "sweep_leftovers",
]
