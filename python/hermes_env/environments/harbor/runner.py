"""Running Harbor tasks in local containers: the image, the container's settings, the reference solution, and the
task's own verifier run as Harbor runs it (offline; see :mod:`hermes_env.environments.harbor.toolbox`).

Shared by the ``oracle`` command and the environment, so both run a task exactly the same way. Over a Ray
cluster (the ``docker`` backend with ``ray_address``) each node builds the tasks itself: :func:`prepare_on_ray`,
:func:`use_on_ray`.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hermes_env.backends.base import ExecutionBackend
from hermes_env.backends.docker import ContainerOptions, DockerBackend
from hermes_env.containers.engine import ContainerEngine
from hermes_env.containers.images import ImageSpec
from hermes_env.containers.upstream_images import ImageMap, UpstreamImageBuilder
from hermes_env.environments.harbor.task import HarborTask, load_task
from hermes_env.environments.harbor.toolbox import TOOLBOX_MOUNT, Toolbox, provision, read_needs

TESTS_DIR = "/tests"
SOLUTION_DIR = "/solution"
VERIFIER_LOGS = "/logs/verifier"
AGENT_LOGS = "/logs/agent"
#: Where commands run when the image sets no WORKDIR (Harbor would use ``/``, which the workspace cannot be).
FALLBACK_WORKDIR = "/root"
_NETWORK_ERRORS = re.compile(
    r"Could not resolve host|Temporary failure (in name resolution|resolving)|Network is unreachable|"
    r"Failed to establish a new connection|Name or service not known|getaddrinfo failed|"
    r"Could not connect to|Connection refused.*(github|huggingface|cran)|unable to access 'https?://",
    re.I,
)


def network_failure(output: str) -> str | None:
    """The line of ``output`` that shows a host could not be reached, None when there is none."""
    for line in output.splitlines():
        if _NETWORK_ERRORS.search(line):
            return line.strip()[:200]
    return None


def host_cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


@dataclass
class PreparedTask:
    """A task ready to run: its image, its toolbox, and its containers' settings."""

    task: HarborTask
    image: str
    toolbox: Toolbox
    options: ContainerOptions
    build_seconds: float
    notes: list[str] = field(default_factory=list)


@dataclass
class VerifyResult:
    reward: float | None
    seconds: float
    output: str
    error: str | None = None


@dataclass
class SolveResult:
    ok: bool
    seconds: float
    output: str
    exit_code: int
    timed_out: bool = False
    #: The output line showing that a host could not be reached, when the solution failed.
    network_failure: str | None = None


class HarborRunner:
    """Builds task images (cached, bounded in parallel), provisions verifier toolboxes, and runs solutions and
    verifiers in a :class:`DockerBackend`'s containers."""

    def __init__(
        self,
        engine: ContainerEngine,
        *,
        image_map: ImageMap | None = None,
        max_parallel_builds: int = 2,
        memory_mb_cap: int | None = None,
    ) -> None:
        self.engine = engine
        self.builder = UpstreamImageBuilder(engine, image_map=image_map, max_parallel=max_parallel_builds)
        self.memory_mb_cap = memory_mb_cap
        self._toolbox_lock = asyncio.Lock()

    async def prepare(self, task: HarborTask, *, image: str | None = None) -> PreparedTask:
        """Build the task's image (with what its test.sh apt-installs) and its toolbox; ImageBuildError or
        ToolboxError (the task fails, not the run). ``image``: a local image to run instead of building
        ``environment/`` (it must already hold what test.sh would apt-install)."""
        started = time.monotonic()
        needs = read_needs(task.test_sh)
        if image is None:
            image = await self.builder.build(
                task.environment_dir,
                extra_packages=needs.apt_packages,
                timeout_s=task.config.environment.build_timeout_sec,
            )
        async with self._toolbox_lock:  # provisioning shares one directory (and pip's downloads)
            toolbox = await asyncio.to_thread(provision, self.engine, needs)
        env_cfg = task.config.environment
        notes = task.config.unhonoured()
        cpus = float(env_cfg.cpus)
        if cpus > host_cpus():
            notes.append(f"cpus = {env_cfg.cpus:g} clamped to this host's {host_cpus()}")
            cpus = float(host_cpus())
        memory = env_cfg.memory_mb
        if self.memory_mb_cap is not None and memory > self.memory_mb_cap:
            notes.append(f"memory_mb = {memory} capped at {self.memory_mb_cap}")
            memory = self.memory_mb_cap
        notes.append(f"storage_mb = {env_cfg.storage_mb} not enforced (no per-container storage quota here)")
        workdir = await self._workdir(image)
        if workdir is None:
            notes.append(f"the image sets no WORKDIR: commands and the verifier run in {FALLBACK_WORKDIR}, not /")
        options = ContainerOptions(
            memory_mib=memory,
            cpus=cpus,
            allow_network=env_cfg.allow_internet,
            workspace=workdir or FALLBACK_WORKDIR,
            mounts=toolbox.mounts,
            env=tuple(env_cfg.env.items()),
        )
        return PreparedTask(task, image, toolbox, options, time.monotonic() - started, notes)

    async def _workdir(self, image: str) -> str | None:
        return await image_workdir(self.engine, image)

    @staticmethod
    def use(backend: DockerBackend, task_id: str, prepared: PreparedTask) -> None:
        backend.use_image(task_id, ImageSpec(image=prepared.image), prepared.options)

    @staticmethod
    async def solve(backend: DockerBackend, task_id: str, task: HarborTask) -> SolveResult:
        """Harbor's oracle agent: ``solution/`` copied to ``/solution``, ``bash /solution/solve.sh`` run."""
        assert task.solution_dir is not None
        started = time.monotonic()
        await backend.copy_in(task_id, task.solution_dir, SOLUTION_DIR)
        env = " ".join(f"{k}={_quote(v)}" for k, v in task.config.solution.get("env", {}).items())
        command = f"mkdir -p {AGENT_LOGS}; {('export ' + env + '; ') if env else ''}bash {SOLUTION_DIR}/solve.sh"
        result = await backend.execute(task_id, command, timeout=task.config.agent.timeout_sec)
        output = result.output or ""
        ok = result.exit_code == 0
        return SolveResult(
            ok, time.monotonic() - started, output, result.exit_code, timed_out=result.timed_out,
            network_failure=None if ok else network_failure(output),
        )  # fmt: skip

    @staticmethod
    async def verify(backend: DockerBackend, task_id: str, task: HarborTask, prepared: PreparedTask) -> VerifyResult:
        """The task's verifier as Harbor runs it, with no network: ``tests/`` copied to ``/tests``, ``bash
        /tests/test.sh`` with the toolbox's shims first on PATH, the reward from ``/logs/verifier/reward.txt`` (a
        number) or ``reward.json`` (its ``reward`` value, else the mean of its values)."""
        started = time.monotonic()
        try:
            await backend.disconnect_network(task_id)
            prep = await backend.execute(
                task_id, f"rm -rf {TESTS_DIR} {VERIFIER_LOGS} && mkdir -p {TESTS_DIR} {VERIFIER_LOGS}", timeout=60
            )
            if prep.exit_code != 0:
                elapsed = time.monotonic() - started
                return VerifyResult(None, elapsed, prep.output, "cannot reset /tests: " + prep.output)
            await backend.copy_in(task_id, task.tests_dir, TESTS_DIR)
        except OSError as exc:
            return VerifyResult(None, time.monotonic() - started, "", str(exc))
        command = offline_verifier_command(
            prepared.toolbox,
            f"bash {TESTS_DIR}/test.sh 2>&1 | tee {VERIFIER_LOGS}/test-stdout.txt",
            env=task.config.verifier.env,
        )
        result = await backend.execute(task_id, command, timeout=task.config.verifier.timeout_sec)
        output = result.output or ""
        if result.timed_out:
            return VerifyResult(0.0, time.monotonic() - started, output,
                                f"the verifier ran past its {task.config.verifier.timeout_sec:g}s")  # fmt: skip
        reward, error = await HarborRunner.read_reward(backend, task_id)
        return VerifyResult(reward, time.monotonic() - started, output, error)

    @staticmethod
    async def read_reward(backend: ExecutionBackend, task_id: str) -> tuple[float | None, str | None]:
        """The reward a verifier wrote in the task's sandbox (``reward.txt``, else ``reward.json``), or None and why."""
        text = await backend.execute(task_id, f"cat {VERIFIER_LOGS}/reward.txt", timeout=30)
        if text.exit_code == 0 and text.output.strip():
            try:
                return float(text.output.strip().split()[0]), None
            except ValueError:
                return None, f"reward.txt holds {text.output.strip()[:80]!r}, not a number"
        data = await backend.execute(task_id, f"cat {VERIFIER_LOGS}/reward.json", timeout=30)
        if data.exit_code == 0 and data.output.strip():
            try:
                parsed = json.loads(data.output)
                if isinstance(parsed, int | float):
                    return float(parsed), None
                values = parsed if isinstance(parsed, dict) else {}
                if "reward" in values:
                    return float(values["reward"]), None
                numbers = [float(v) for v in values.values() if isinstance(v, int | float)]
                if numbers:
                    return sum(numbers) / len(numbers), None
            except (ValueError, TypeError):
                pass
            return None, f"reward.json holds no reward: {data.output.strip()[:120]!r}"
        return None, "the verifier wrote neither /logs/verifier/reward.txt nor reward.json"


# -- over a Ray cluster: functions the docker backend's node actors run (``fn(node, *args)``) ----------------------
async def _prepare_on_node(
    node: Any, name: str, data: bytes, image_map: dict[str, str], max_parallel_builds: int
) -> PreparedTask:
    """On one node: unpack task ``name``'s folder (a tar archive) and build it with the node's one HarborRunner."""
    from hermes_env.backends.ray_docker import unpack_dir

    runner = node.state.get("harbor_runner")
    if runner is None:
        runner = node.state["harbor_runner"] = HarborRunner(
            node.backend.engine, image_map=ImageMap(entries=image_map), max_parallel_builds=max_parallel_builds
        )
    folder = node.files / "harbor" / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    prepared = await runner.prepare(load_task(unpack_dir(data, folder)))
    node.state.setdefault("harbor_prepared", {})[name] = prepared
    return prepared


def _use_on_node(node: Any, task_id: str, name: str) -> None:
    prepared = node.state.get("harbor_prepared", {}).get(name)
    if prepared is None:
        raise KeyError(f"Harbor task {name!r} was not prepared on this node (prepare_on_ray first)")
    HarborRunner.use(node.backend, task_id, prepared)


async def prepare_on_ray(
    backend: Any, tasks: Sequence[HarborTask], *, image_map: dict[str, str], max_parallel_builds: int
) -> list[PreparedTask | BaseException]:
    """Build each task on every alive node of ``backend`` (a RayDockerBackend); per task, its PreparedTask (as the
    first node made it) or the exception of a node where it did not build (the task is then left out)."""
    from hermes_env.backends.ray_docker import pack_dir

    async def one(task: HarborTask) -> PreparedTask | BaseException:
        data = await asyncio.to_thread(pack_dir, task.path)
        results = await backend.on_every_node(_prepare_on_node, task.name, data, image_map, max_parallel_builds)
        failed = [r for r in results if isinstance(r, BaseException)]
        return failed[0] if failed else results[0]

    return list(await asyncio.gather(*(one(t) for t in tasks)))


def use_on_ray(backend: Any, task_id: str, name: str, workspace: str) -> None:
    """Run ``task_id`` in task ``name``'s container (as :func:`prepare_on_ray` built it on the rollout's node)."""
    backend.use_on_node(task_id, workspace, _use_on_node, name)


async def image_workdir(engine: ContainerEngine, image: str) -> str | None:
    """The image's WORKDIR; None when it sets none (or ``/``, which cannot be a workspace)."""
    result = await engine.run("image", "inspect", "--format", "{{.Config.WorkingDir}}", image, check=False)
    return result.text.strip().rstrip("/") or None


def offline_verifier_command(toolbox: Toolbox, command: str, *, env: Mapping[str, str] | None = None) -> str:
    """``command`` as a verifier runs it: the toolbox's shims first on PATH, pip offline at the toolbox's wheels,
    uv's cache in a fresh directory removed afterwards, ``env`` exported; its exit status is ``command``'s."""
    exports = "".join(f"export {k}={_quote(v)}; " for k, v in (env or {}).items())
    return (
        f'(export PATH={toolbox.shims}:"$PATH" PIP_NO_INDEX=1 PIP_FIND_LINKS={TOOLBOX_MOUNT}/wheels; '
        'export HERMES_VERIFIER_CACHE="$(mktemp -d /tmp/hermes-verifier.XXXXXX)"; '
        f"{exports}{{ {command}\n}}; status=$?; "
        'rm -rf "$HERMES_VERIFIER_CACHE"; exit $status)'
    )


def _quote(value: str) -> str:
    return "'" + str(value).replace("'", "'\"'\"'") + "'"


def tail(text: str, limit: int = 1500) -> str:
    text = text.strip()
    return text if len(text) <= limit else "..." + text[-limit:]
