"""The docker backend on a real engine: a container per task, its limits, and every way a container can fail."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from hermes_env.backends import get_backend
from hermes_env.backends.docker import DockerBackend
from hermes_env.containers import ImageSpec
from hermes_env.containers.engine import LABEL, OWNER_LABEL, owner_token
from hermes_env.errors import ContainerLostError, WorkspacePathError
from hermes_env.isolation.process import pids_working_in


@pytest.fixture(params=["channel", "exec"])
async def docker(request: pytest.FixtureRequest) -> AsyncIterator[DockerBackend]:
    backend = get_backend("docker", memory_bytes="256MiB", max_processes=64, cpus=1, transport=request.param)
    assert isinstance(backend, DockerBackend)
    yield backend
    await backend.aclose()


def _inspect(backend: DockerBackend, task_id: str) -> dict:
    box = backend._containers[task_id]
    return json.loads(backend.engine.run_sync("inspect", "--type", "container", box.cid).text)[0]


async def test_each_task_gets_its_own_limited_labelled_container(docker: DockerBackend) -> None:
    await docker.write_file("a", "mine.txt", b"a")
    res = await docker.execute("b", "pwd; ls; cat /sys/class/net/*/address 2>/dev/null | wc -l; ls /sys/class/net", 10)
    assert res.ok and res.output.splitlines()[0] == "/workspace" and "mine.txt" not in res.output
    assert res.output.split()[-1] == "lo"  # no network but loopback
    info = _inspect(docker, "a")
    assert info["Id"] != _inspect(docker, "b")["Id"]
    labels = info["Config"]["Labels"]
    assert labels[LABEL] == "rollout" and labels[OWNER_LABEL] == owner_token()
    host = info["HostConfig"]
    assert host["Memory"] == 256 * 1024**2 and host["PidsLimit"] == 64 and host["NanoCpus"] == 10**9
    await docker.cleanup("a")
    assert "a" not in docker._containers
    assert docker.engine.run_sync("inspect", "--type", "container", info["Id"], check=False).returncode != 0
    # The same task id later gets a fresh container and an empty workspace.
    assert await docker.list_files("a") == []


async def test_network_is_there_only_when_allowed() -> None:
    backend = get_backend("docker", allow_network=True, memory_bytes="128MiB")
    try:
        res = await backend.execute("t", "ls /sys/class/net", 10)
        assert res.ok and set(res.output.split()) - {"lo"}, res.output
    finally:
        await backend.aclose()


async def test_timeout_kills_the_call_and_what_it_started(docker: DockerBackend) -> None:
    res = await docker.execute("t", "sleep 300 & echo $! > bg.pid; sleep 200", 1.5)
    assert res.timed_out and not res.ok and "timed out after 1.5s" in res.output
    left = await docker.execute("t", "ps -eo args | grep -c '^sleep [23]00' || true", 10)
    assert left.output.strip() == "0", left
    # A finished call's background job ends with the call too (as on the other backends).
    res = await docker.execute("t", "sleep 250 & echo started", 10)
    assert res.ok and res.output == "started\n" and not res.timed_out
    left = await docker.execute("t", "ps -eo args | grep -c '^sleep 250' || true", 10)
    assert left.output.strip() == "0", left


async def test_fork_bomb_is_bounded_by_the_pids_limit(docker: DockerBackend) -> None:
    res = await docker.execute("t", "bomb() { bomb | bomb & }; bomb; sleep 2; echo done", 8)
    assert not res.ok or "done" in res.output
    after = await docker.execute("t", "echo alive", 20)
    assert after.ok and after.output == "alive\n"


async def test_an_oom_kill_fails_the_rollout_and_removes_its_container(docker: DockerBackend) -> None:
    await docker.execute("t", "true", 10)
    cid = docker._containers["t"].cid
    with pytest.raises(ContainerLostError, match=r"out-of-memory killer.*256 MiB.*memory_bytes"):
        await docker.execute("t", "python3 -c 'x = bytearray(600 * 1024 * 1024)'", 30)
    assert docker.engine.run_sync("inspect", "--type", "container", cid, check=False).returncode != 0
    with pytest.raises(ContainerLostError, match="out-of-memory"):  # the rollout's later calls fail the same way
        await docker.read_file("t", "x")
    # Another task is unaffected.
    assert (await docker.execute("other", "echo ok", 10)).ok


async def test_a_container_that_dies_mid_call_fails_the_rollout(docker: DockerBackend) -> None:
    await docker.execute("t", "true", 10)
    cid = docker._containers["t"].cid
    call = asyncio.create_task(docker.execute("t", "sleep 60", 50))
    await asyncio.sleep(1.0)
    await docker.engine.run("kill", cid)
    with pytest.raises(ContainerLostError, match=r"container of task 't' died during a call: it is (exited|stopped)"):
        await asyncio.wait_for(call, 30)
    assert docker.engine.run_sync("inspect", "--type", "container", cid, check=False).returncode != 0


async def test_cleanup_during_a_call_ends_that_call(docker: DockerBackend) -> None:
    call = asyncio.create_task(docker.execute("t", "sleep 300", 120))
    await asyncio.sleep(1.0)
    await docker.cleanup("t")
    res = await asyncio.wait_for(call, 30)
    assert not res.ok and "cleaned up" in (res.error or "")


async def test_an_image_that_does_not_exist_fails_the_rollout_clearly(docker: DockerBackend) -> None:
    docker.use_image("t", ImageSpec(image="hermes_env/no-such-image:1"))
    with pytest.raises(ContainerLostError, match=r"no image for task 't'.*no-such-image.*pulling it failed"):
        await docker.execute("t", "true", 10)
    with pytest.raises(ContainerLostError):  # no retry storm: the same error for every later call
        await docker.execute("t", "true", 10)


async def test_a_recipe_that_fails_to_build_fails_every_rollout_using_it(docker: DockerBackend, tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text("ARG HERMES_BASE_IMAGE\nFROM ${HERMES_BASE_IMAGE}\nRUN exit 7\n")
    spec = ImageSpec(dockerfile=tmp_path / "Dockerfile")
    for task in ("r1", "r2", "r3"):
        docker.use_image(task, spec)
    results = await asyncio.gather(*(docker.execute(t, "true", 10) for t in ("r1", "r2", "r3")), return_exceptions=True)
    assert all(isinstance(r, ContainerLostError) and "failed to build" in str(r) for r in results), results


async def test_files_an_image_puts_in_the_workspace_are_seen(docker: DockerBackend, tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text(
        "ARG HERMES_BASE_IMAGE\nFROM ${HERMES_BASE_IMAGE}\n"
        "RUN mkdir -p /workspace/app && echo baked > /workspace/app/data\n"
    )
    docker.use_image("t", ImageSpec(dockerfile=tmp_path / "Dockerfile"))
    assert await docker.list_files("t") == ["app/data"]
    assert await docker.read_file("t", "/workspace/app/data") == b"baked\n"
    res = await docker.execute("t", "cat app/data", 10)
    assert res.output == "baked\n"
    with pytest.raises(RuntimeError, match="already has a container"):
        docker.use_image("t", None)


async def test_file_methods_stay_in_the_workspace(docker: DockerBackend) -> None:
    res = await docker.execute("t", "ln -s /etc/passwd out; ln -s /etc dir; ln -s sub/in.txt rel; mkdir sub", 10)
    assert res.ok
    await docker.write_file("t", "sub/in.txt", b"inside")
    assert await docker.read_file("t", "rel") == b"inside"  # a symlink within the workspace is fine
    for op, error in (
        (docker.read_file("t", "out"), PermissionError),
        (docker.write_file("t", "dir/x", b"x"), PermissionError),
        (docker.write_file("t", "out", b"x"), PermissionError),
        (docker.list_files("t", "dir"), PermissionError),
        (docker.read_file("t", "../etc/passwd"), PermissionError),
        (docker.read_file("t", "missing"), FileNotFoundError),
        (docker.read_file("t", "sub"), IsADirectoryError),
        (docker.write_file("t", "sub/in.txt/deeper", b"x"), WorkspacePathError),  # as local, bwrap, sandbox
        (docker.write_file("t", "sub/in.txt/a/b", b"x"), WorkspacePathError),
        (docker.read_file("t", "sub/in.txt/deeper"), WorkspacePathError),
    ):
        with pytest.raises(error):
            await op
    assert (await docker.execute("t", "cat /etc/passwd | head -1", 10)).output.startswith("root:")
    assert await docker.list_files("t") == ["sub/in.txt"]


async def test_commands_see_neither_host_files_nor_host_services(docker: DockerBackend, tmp_path: Path) -> None:
    secret = tmp_path / "host-secret.txt"
    secret.write_text("host secret")
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        res = await docker.execute(
            "t", f"cat {secret} 2>&1; (exec 3<>/dev/tcp/127.0.0.1/{port} && echo CONNECTED) 2>&1 || echo REFUSED", 10
        )
    assert "host secret" not in res.output and "No such file" in res.output
    assert "CONNECTED" not in res.output and "REFUSED" in res.output


@pytest.mark.parametrize("transport", ["channel", "exec"])
async def test_output_is_cut_with_a_note_and_a_flood_is_stopped(transport: str) -> None:
    backend = get_backend(
        "docker", transport=transport, max_output_bytes=1000, kill_output_bytes=100_000, memory_bytes="256MiB"
    )
    try:
        res = await backend.execute("t", "head -c 5000 /dev/zero | tr '\\0' x; echo; echo done >&2", 20)
        assert res.ok and res.truncated and res.output.startswith("x" * 1000)
        assert "showing the first 1000 of 5002 bytes" in res.output or "of 5006 bytes" in res.output, res.output[-200:]
        res = await backend.execute("t", "yes", 60)
        assert res.truncated and not res.ok and not res.timed_out and "command stopped" in res.output
        after = await backend.execute("t", "echo still here", 10)
        assert after.ok and after.output == "still here\n"
    finally:
        await backend.aclose()


async def test_a_call_from_another_event_loop_while_this_one_waits() -> None:
    """hermes-agent reward code calls ToolContext synchronously: the call runs on the sync bridge's loop while the
    caller's loop (which made the container's channel) is blocked; it goes through the engine's exec instead."""
    from hermes_env.sync_bridge import HELPER

    backend = get_backend("docker", memory_bytes="256MiB")
    assert isinstance(backend, DockerBackend)
    try:
        assert (await backend.execute("t", "echo a > f", 10)).ok
        assert backend._containers["t"].channel is not None  # made on this loop
        res = HELPER.run(backend.execute("t", "cat f; echo b >> f; exit 3", 10))  # this loop is blocked meanwhile
        assert (res.output, res.exit_code) == ("a\n", 3)
        assert HELPER.run(backend.read_file("t", "f")) == b"a\nb\n"
        HELPER.run(backend.write_file("t", "g", b"from the bridge"))
        assert await backend.read_file("t", "g") == b"from the bridge"  # back on the channel
        timed = HELPER.run(backend.execute("t", "sleep 60", 1))
        assert timed.timed_out and (await backend.execute("t", "pgrep -c sleep", 10)).output.strip() == "0"
        HELPER.run(backend.cleanup("t"))  # the channel's readers are removed by this loop when it runs again
        await asyncio.sleep(0)
        assert "t" not in backend._containers
    finally:
        await backend.aclose()


async def test_a_start_cancelled_at_any_moment_leaves_no_container_and_no_monitor() -> None:
    # A dropped group cancels its rollouts mid-start. Killing `podman run` there could leave conmon and a
    # `runc init` of a container no engine command lists: the start now runs to its end and is then removed.
    backend = get_backend("docker", memory_bytes="256MiB", max_processes=64, cpus=1)
    assert isinstance(backend, DockerBackend)
    try:
        for i, delay in enumerate((0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.8)):
            start = asyncio.create_task(backend.execute(f"t{i}", "true", 10))
            await asyncio.sleep(delay)
            start.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await start
            await backend.cleanup(f"t{i}")
            listed = backend.engine.run_sync("ps", "-a", "--filter", f"label={OWNER_LABEL}={owner_token()}", "-q")
            assert listed.text.strip() == "", f"cancelled after {delay}s: containers left"
            if backend._root is None:  # cancelled before it got as far as the engine
                continue
            for _ in range(50):  # a removed container's monitor exits a moment after the removal
                if not pids_working_in(backend._root.path):
                    break
                await asyncio.sleep(0.1)
            assert pids_working_in(backend._root.path) == [], f"cancelled after {delay}s: processes left"
        assert (await backend.execute("after", "echo ok", 10)).output.strip() == "ok"
    finally:
        await backend.aclose()


async def test_a_monitor_left_in_the_run_directory_is_stopped(docker: DockerBackend) -> None:
    await docker.execute("t", "true", 10)
    assert docker._root is not None
    root = docker._root.path
    # Stand-ins for a conmon whose container podman lost: one naming a container, one naming none.
    sleeper = [sys.executable, "-c", "import time; time.sleep(300)"]
    named = subprocess.Popen([*sleeper, "-n", "hermes_env-lost-1"], cwd=root)
    other = subprocess.Popen(sleeper, cwd=root)
    try:
        await docker._stop_lost_monitors("hermes_env-lost-1", settle_s=0.2)
        assert named.wait(10) == -signal.SIGKILL
        assert other.poll() is None  # not that container's monitor
        await docker.aclose()  # whatever still works in the run's directory goes with the run
        assert other.wait(10) == -signal.SIGKILL
        assert not root.exists()
    finally:
        for proc in (named, other):
            proc.kill()
            proc.wait()


_SUBREAPER_CLIENT = r"""
import asyncio, json, os, time
from hermes_env.backends import get_backend
from hermes_env.isolation import reaper
from hermes_env.isolation.process import children

async def main():
    assert reaper.start()  # as the bwrap backend makes it: a subreaper, so conmon's exit comes back here
    backend = get_backend("docker", memory_bytes="256MiB", max_processes=64, cpus=1)
    for i in range(3):
        assert (await backend.execute(f"t{i}", "true", 30)).ok
        await backend.cleanup(f"t{i}")
    await backend.aclose()
    time.sleep(3 * reaper.INTERVAL_S + 1.0)
    kids = {}
    for pid in children(os.getpid()):
        with open(f"/proc/{pid}/stat") as f:
            head, tail = f.read().rsplit(")", 1)
        kids[pid] = (head.split("(", 1)[1], tail.split()[0])
    print(json.dumps(kids))

asyncio.run(main())
"""


def test_a_subreaper_that_runs_containers_keeps_no_monitor_zombies(tmp_path: Path) -> None:
    # podman's conmon daemonizes: when it exits, a subreaper above it (a process that also starts bubblewrap
    # sandboxes) receives it, and nobody else will ever wait for it.
    script = tmp_path / "client.py"
    script.write_text(_SUBREAPER_CLIENT)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "python")}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    kids = json.loads(done.stdout.strip().splitlines()[-1])
    assert [name for name, state in kids.values() if state == "Z"] == [], kids
