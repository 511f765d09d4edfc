"""The container engine's configuration that set-up writes, and how this project's engine commands read it.

Where the engine's defaults work, nothing is written. Where they do not (on some VMs podman's default runtime,
crun, refuses hybrid cgroups, and runc cannot raise RLIMIT_NOFILE above the caller's hard limit), set-up
(``python -m hermes_env.containers setup``) writes a podman ``containers.conf`` naming a runtime and default
ulimits that do work, and every podman command this project runs reads that file (``CONTAINERS_CONF``). The
same file serves by hand::

    CONTAINERS_CONF=$(python -m hermes_env.containers config-path) podman run --rm -it hermes_env/base:bookworm

Docker keeps such settings in its daemon (``/etc/docker/daemon.json``: ``default-runtime``, ``default-ulimits``);
set-up does not touch a daemon's configuration.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

CONFIG_DIR_ENV = "HERMES_ENV_CONFIG_DIR"


def config_dir() -> Path:
    """``$HERMES_ENV_CONFIG_DIR``, else ``$XDG_CONFIG_HOME/hermes_env``, else ``~/.config/hermes_env``."""
    explicit = os.environ.get(CONFIG_DIR_ENV)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "hermes_env"


def podman_conf_path() -> Path:
    return config_dir() / "containers.conf"


def engine_environment(kind: str) -> dict[str, str]:
    """The environment for this project's engine commands: ours, plus podman's configuration file when set-up
    wrote one (a ``CONTAINERS_CONF`` the user set wins)."""
    env = dict(os.environ)
    if kind == "podman" and "CONTAINERS_CONF" not in env:
        path = podman_conf_path()
        if path.is_file():
            env["CONTAINERS_CONF"] = str(path)
    return env


def render_podman_conf(runtime: str, ulimits: Mapping[str, tuple[int, int]]) -> str:
    """A ``containers.conf`` that sets the OCI runtime and the default ulimits of every container and build step."""
    limits = ", ".join(f'"{name}={soft}:{hard}"' for name, (soft, hard) in sorted(ulimits.items()))
    return (
        "# Written by `python -m hermes_env.containers setup`: the engine defaults failed on this machine and these\n"
        "# settings passed its probe. Delete this file and run set-up again to re-check.\n"
        "[containers]\n"
        f"default_ulimits = [{limits}]\n"
        "\n"
        "[engine]\n"
        f'runtime = "{runtime}"\n'
    )


def write_podman_conf(runtime: str, ulimits: Mapping[str, tuple[int, int]]) -> Path:
    path = podman_conf_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(render_podman_conf(runtime, ulimits))
    tmp.replace(path)
    return path
