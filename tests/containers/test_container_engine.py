"""The engine client: choosing an engine, owner labels, the reaper (any exit of a run) and the sweep (SIGKILL)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hermes_env.containers import BASE_IMAGE, ContainerEngine, detect_engine
from hermes_env.containers.config import render_podman_conf
from hermes_env.containers.engine import LABEL, OWNER_LABEL, owner_alive, owner_token, sweep_leftovers
from hermes_env.containers.setup import ensure_base_image, probe_container
from hermes_env.errors import EngineUnavailableError

REPO = Path(__file__).resolve().parents[2]


def _start_labelled(engine: ContainerEngine, owner: str) -> str:
    return engine.run_sync(
        "run", "-d", "--init", "--label", f"{LABEL}=test", "--label", f"{OWNER_LABEL}={owner}",
        "--network", "none", "--entrypoint", "/bin/sleep", BASE_IMAGE, "infinity",
    ).text.strip()  # fmt: skip


def _exists(engine: ContainerEngine, cid: str) -> bool:
    return engine.run_sync("inspect", "--type", "container", cid, check=False).returncode == 0


def _wait_until(predicate, limit: float = 30.0) -> bool:  # noqa: ANN001
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return predicate()


def test_owner_tokens_tell_live_dead_and_foreign_owners() -> None:
    mine = owner_token()
    assert owner_alive(mine) is True
    host, boot, pid, started = mine.split(":")
    assert owner_alive(f"{host}:{boot}:{pid}:{int(started) + 1}") is False  # the pid was reused by another process
    assert owner_alive(f"{host}:other-boot:{pid}:{started}") is False  # before a reboot
    assert owner_alive(f"elsewhere:{boot}:{pid}:{started}") is None  # another host's: not ours to judge
    assert owner_alive("garbage") is False
    child = subprocess.Popen(["sleep", "30"])
    token = owner_token(child.pid)
    assert owner_alive(token) is True
    child.kill()
    child.wait()
    assert owner_alive(token) is False


def test_sweep_removes_only_containers_of_ended_owners(engine: ContainerEngine) -> None:
    host, boot, _, _ = owner_token().split(":")
    dead = _start_labelled(engine, f"{host}:{boot}:999999999:1")
    foreign = _start_labelled(engine, f"another-host:{boot}:1:1")
    live = _start_labelled(engine, owner_token())
    try:
        removed = sweep_leftovers(engine)
        assert dead in removed and foreign not in removed and live not in removed
        assert not _exists(engine, dead) and _exists(engine, foreign) and _exists(engine, live)
    finally:
        engine.remove_sync([dead, foreign, live])


_RUN_OWNER = """
import asyncio, faulthandler, signal, sys
from hermes_env.backends import get_backend

faulthandler.register(signal.SIGUSR1, all_threads=True)  # the test asks for the stacks if it does not exit
# Ctrl-C as in a terminal: a suite started in the background (`cmd &` without job control) hands SIGINT
# down ignored, and Python then keeps it ignored.
signal.signal(signal.SIGINT, signal.default_int_handler)

async def main():
    backend = get_backend("docker", memory_bytes="128MiB")
    result = await backend.execute("t", "hostname", 30)
    print(result.output.strip(), flush=True)
    await asyncio.sleep(3600)

asyncio.run(main())
"""


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
def test_a_run_that_dies_leaves_no_container(engine: ContainerEngine, sig: signal.Signals) -> None:
    # A container left by an earlier run killed with its reaper (SIGKILL of everything): the next start sweeps it.
    host, boot, _, _ = owner_token().split(":")
    leftover = _start_labelled(engine, f"{host}:{boot}:999999998:1")
    proc = subprocess.Popen(
        [sys.executable, "-c", _RUN_OWNER], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.strip() == b"sandbox", proc.stderr.read() if proc.poll() is not None else line
        assert not _exists(engine, leftover)
        owner = owner_token(proc.pid)
        owned = engine.run_sync("ps", "-aq", "--filter", f"label={OWNER_LABEL}={owner}").text.split()
        assert len(owned) == 1
        proc.send_signal(sig)
        try:
            proc.wait(90)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGUSR1)
            time.sleep(1)
            proc.kill()
            _, err = proc.communicate()
            pytest.fail(f"the run did not end within 90 s of {sig.name}; its threads then:\n{err.decode()[-6000:]}")
        assert _wait_until(lambda: not _exists(engine, owned[0])), f"container of a run ended by {sig.name} remains"
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()  # reaps it and closes its pipes
        engine.remove_sync([leftover])


def test_a_docker_client_without_a_daemon_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "docker"
    fake.write_text("#!/bin/sh\necho 'Cannot connect to the Docker daemon at unix:///var/run/d.sock' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    monkeypatch.delenv("HERMES_CONTAINER_ENGINE", raising=False)
    detect_engine.cache_clear()
    try:
        with pytest.raises(EngineUnavailableError, match="docker .* cannot run containers: .*Cannot connect"):
            detect_engine("docker")
        chosen = detect_engine(None)
        assert chosen.program != str(fake)
        monkeypatch.setenv("PATH", str(tmp_path))  # only the daemon-less client
        detect_engine.cache_clear()
        with pytest.raises(EngineUnavailableError) as info:
            detect_engine(None)
        message = str(info.value)
        assert "Cannot connect" in message and "podman" in message and "install" in message.lower()
    finally:
        detect_engine.cache_clear()


def test_setup_is_idempotent_and_the_probe_passes(engine: ContainerEngine) -> None:
    assert ensure_base_image(engine, quiet=True) is False  # present: nothing to do
    assert probe_container(engine) is None


def test_podman_configuration_text() -> None:
    text = render_podman_conf("runc", {"nproc": (100, 200), "nofile": (10, 20)})
    assert 'runtime = "runc"' in text and 'default_ulimits = ["nofile=10:20", "nproc=100:200"]' in text


def test_setup_lowers_only_the_rlimit_the_runtime_refused() -> None:
    from hermes_env.containers.setup import _lowered

    limits = {"nofile": (20000, 20000), "nproc": (96551, 96551)}
    nproc = _lowered(limits, "runc create failed: error setting rlimit type 6: operation not permitted")
    assert nproc == {"nofile": (20000, 20000), "nproc": (48275, 48275)}
    nofile = _lowered(limits, "error setting rlimit type 7: operation not permitted")
    assert nofile == {"nofile": (10000, 10000), "nproc": (96551, 96551)}
    assert _lowered(limits, "cgroups in hybrid mode not supported") is None  # not a limit: try another runtime
    assert _lowered({"nofile": (1024, 1024), "nproc": (1024, 1024)}, "rlimit type 6") is None  # at the floor
