"""Task images from upstream Dockerfiles, for ``register_task_env_overrides`` on the docker backend, with the
verifier toolbox that lets an environment file's own verifier run offline.

Upstream's Terminal-Bench 2 environment names each task's image as the path of its ``environment/Dockerfile``
(``FROM python:3.13-slim-bookworm``, ``FROM ubuntu:24.04``, ...) and, after the agent, verifies through its
``ToolContext``: ``mkdir -p /tests /logs/verifier``, ``upload_dir(tests, "/tests")``, ``bash /tests/test.sh``,
``download_dir("/logs/verifier", ...)``. A Terminal-Bench 2 ``test.sh`` fetches uv, Python and pytest from the
network. Here, as the Harbor runner does (:mod:`hermes_env.environments.harbor.toolbox`, whose functions this module
uses):

- the image is built on local stand-ins for its base images (:class:`UpstreamImageBuilder`, the image map), with
  the packages a Terminal-Bench 2 ``test.sh`` apt-installs (curl) as a last layer;
- the verifier toolbox (uv, the Python ``uvx -p`` asks for, pytest's wheels, the shims) is provisioned when the
  image is built and mounted read-only into the task's container: the agent can read it, never change it. The
  ``test.sh`` is not known then (upstream writes it after the agent), so the toolbox is made for Terminal-Bench
  2's convention (uv :data:`DEFAULT_UV_VERSION`, Python :data:`DEFAULT_PYTHON`); the wheels ``test.sh`` pins are
  added (offline-readable through the same read-only mount) when the verifier runs it;
- the environment's own ``ctx.terminal`` commands (never the model's tool calls) run with the toolbox's shims
  first on ``PATH`` (:func:`~hermes_env.environments.harbor.runner.offline_verifier_command`): the uv installer ``curl``
  fetches rewrites ``$HOME/.local/bin/env`` to point at the toolbox whatever the agent left there, and ``uvx``
  runs the toolbox's Python with a fresh cache, so a pytest, python or ``env`` file the agent planted is never
  what runs the tests;
- when the agent's loop ends, the task is sealed as the Harbor runner seals it before ``test.sh``: the network is
  taken from the container and ``/tests`` and ``/logs/verifier`` are emptied (nothing the agent planted there,
  a ``conftest.py`` or a ``reward.txt``, survives). An environment whose agent did not run through
  ``HermesAgentLoop`` is sealed at its first ``ctx.terminal`` command instead (network and ``/logs/verifier``
  only: it may have uploaded ``/tests`` already).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from pathlib import Path
from typing import Any

from hermes_env.backends.docker import ContainerOptions, DockerBackend
from hermes_env.containers.upstream_images import is_upstream_recipe
from hermes_env.environments.harbor.runner import (
    FALLBACK_WORKDIR,
    TESTS_DIR,
    VERIFIER_LOGS,
    image_workdir,
    offline_verifier_command,
)
from hermes_env.environments.harbor.toolbox import (
    DEFAULT_PYTHON,
    DEFAULT_UV_VERSION,
    Toolbox,
    VerifierNeeds,
    provision,
    read_needs,
)

logger = logging.getLogger(__name__)

#: What a Terminal-Bench 2 ``test.sh`` apt-installs before fetching uv (in the image, so that its ``apt-get
#: install`` succeeds offline).
TB2_APT_PACKAGES = ("curl",)


def build_time_needs() -> VerifierNeeds:
    """The toolbox provisioned with the image, before ``test.sh`` is known: Terminal-Bench 2's convention."""
    return VerifierNeeds(
        apt_packages=list(TB2_APT_PACKAGES), uv_version=DEFAULT_UV_VERSION, pythons=[DEFAULT_PYTHON], uses_uv=True
    )


class VerifierSession:
    """One task's upstream image and toolbox; wraps the environment's own ``ctx.terminal`` commands."""

    def __init__(self, backend: DockerBackend, task_id: str, dockerfile: Path) -> None:
        self.backend = backend
        self.task_id = task_id
        self.dockerfile = dockerfile
        self.needs = build_time_needs()
        self.toolbox: Toolbox | None = None
        self.sealed = False
        self._test_sh_digest: str | None = None
        self._lock = asyncio.Lock()

    async def prepare(self) -> tuple[str, ContainerOptions]:
        """Build the image and provision the toolbox (the docker backend awaits this when the container starts)."""
        engine = self.backend.engine
        image = await self.backend.images.upstream_builder().build(
            self.dockerfile.parent, dockerfile=self.dockerfile, extra_packages=self.needs.apt_packages
        )
        self.toolbox = await asyncio.to_thread(provision, engine, self.needs)
        workdir = await image_workdir(engine, image)
        if workdir is None:
            logger.info("task %s: its image sets no WORKDIR; commands run in %s", self.task_id, FALLBACK_WORKDIR)
        return image, ContainerOptions(workspace=workdir or FALLBACK_WORKDIR, mounts=self.toolbox.mounts)

    async def seal(self, *, reset_tests: bool = True) -> None:
        """The agent is done: no network, and nothing it left in the verifier's directories."""
        if self.sealed:
            return
        self.sealed = True
        await self.backend.disconnect_network(self.task_id)
        dirs = f"{TESTS_DIR} {VERIFIER_LOGS}" if reset_tests else VERIFIER_LOGS
        result = await self.backend.execute(self.task_id, f"rm -rf {dirs}", timeout=60)
        if result.exit_code != 0:
            raise OSError(f"cannot empty {dirs} in task {self.task_id!r}'s container: {result.output[-300:]}")

    async def wrap(self, ctx: Any, command: str) -> str:
        """``command`` (one of the environment's own) as the verifier runs it; the wheels the task's ``test.sh``
        pins are provisioned first."""
        async with self._lock:
            await self.backend.start(self.task_id)
            await self.seal(reset_tests=False)
            await self._provision_test_sh()
        assert self.toolbox is not None
        return offline_verifier_command(self.toolbox, command)

    async def _provision_test_sh(self) -> None:
        found = await self.backend.execute(self.task_id, f"cat {TESTS_DIR}/test.sh 2>/dev/null", timeout=30)
        if found.exit_code != 0 or not found.output.strip():
            return
        digest = hashlib.sha256(found.output.encode()).hexdigest()
        if digest == self._test_sh_digest:
            return
        self._test_sh_digest = digest
        needs = read_needs(found.output)
        mounted = set(self.needs.pythons)
        for version in needs.pythons:
            if version not in mounted:
                logger.warning(
                    "task %s: test.sh asks for Python %s; the toolbox mounted when its container started has %s "
                    "(the verifier's uvx -p %s fails)", self.task_id, version, ", ".join(sorted(mounted)), version
                )  # fmt: skip
        if needs.uv_version and needs.uv_version != self.needs.uv_version:
            logger.info("task %s: test.sh installs uv %s; the toolbox's uv %s stands in",
                        self.task_id, needs.uv_version, self.needs.uv_version)  # fmt: skip
        wanted = VerifierNeeds(
            uv_version=self.needs.uv_version,
            pythons=[v for v in needs.pythons if v in mounted] or list(self.needs.pythons),
            wheels=needs.wheels,
            uses_uv=True,
        )
        await asyncio.to_thread(provision, self.backend.engine, wanted)


_sessions: dict[str, VerifierSession] = {}


def use_upstream_dockerfile(backend: Any, task_id: str, dockerfile: Path, ctx: Any) -> bool:
    """Run ``task_id`` from ``dockerfile`` with the verifier toolbox when it is an upstream recipe on the docker
    backend (``ctx``'s own commands then run as the verifier's); False when it is not (the caller uses it as is)."""
    if not isinstance(backend, DockerBackend) or not is_upstream_recipe(dockerfile):
        return False
    session = VerifierSession(backend, task_id, dockerfile)
    backend.use_image(task_id, None, prepare=session.prepare)
    ctx.command_wrapper = session.wrap
    _sessions[task_id] = session
    return True


async def agent_finished(task_id: str) -> None:
    """Seal the task's container for its verifier (a no-op for tasks without an upstream image)."""
    session = _sessions.get(task_id)
    if session is not None and session.toolbox is not None:
        await session.seal()


def forget(task_id: str) -> None:
    _sessions.pop(task_id, None)
