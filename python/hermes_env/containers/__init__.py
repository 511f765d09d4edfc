"""Containers: a Docker-compatible engine (docker or podman) driven through its command line, the local base
image, and per-task images built once and cached by content. The ``docker`` backend runs rollouts in them."""

from hermes_env._renamed import old_names
from hermes_env.containers.engine import LABEL, ContainerEngine, detect_engine, sweep_leftovers
from hermes_env.containers.images import BASE_IMAGE, ImageCache, ImageSpec

__all__ = [
    "BASE_IMAGE",
    "LABEL",
    "ContainerEngine",
    "ImageCache",
    "ImageSpec",
    "detect_engine",
    "sweep_leftovers",
]


# Exceptions live in hermes_env.errors; the names this package once re-exported still work for a release
# (hermes_env._renamed.OLD_NAMES), each with a warning once.
__getattr__ = old_names(__name__)
