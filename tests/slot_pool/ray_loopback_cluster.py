"""A real two-node Ray cluster bound to 127.0.0.1, for tests (``ray_cluster``, a module-scoped fixture: import it).

A head node and a second node joining it, both started with ``ray start`` on loopback, with one CPU and a small
object store each. Teardown stops only this cluster's processes (found by its private temp dir), not other Ray
sessions on the host.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import hermes_env
import pytest

ray = pytest.importorskip("ray")

LOOPBACK_CLI = str(Path(__file__).with_name("ray_loopback_cli.py"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cluster_pids(markers: list[str]) -> list[int]:
    """Live processes whose command line names one of ``markers``, and all their descendants."""
    table: dict[int, tuple[bytes, int, bytes]] = {}
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmd = f.read()
                with open(f"/proc/{pid}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
            except (OSError, IndexError):
                continue
            table[int(pid)] = (cmd, int(fields[1]), fields[0])
    found = {p for p, (cmd, _, _) in table.items() if p != os.getpid() and any(m.encode() in cmd for m in markers)}
    while True:
        children = {p for p, (_, parent, _) in table.items() if parent in found} - found
        if not children:
            break
        found |= children
    return [p for p in found if table[p][2] != b"Z"]


def _ray_start(args: list[str], env: dict[str, str]) -> None:
    cmd = [sys.executable, LOOPBACK_CLI, "start", *args]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    if proc.returncode != 0:
        raise RuntimeError(f"ray start {' '.join(args)} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[str]:
    from ray._private import ray_constants

    saved = ray_constants.ENABLE_RAY_CLUSTER
    temp_dir = tempfile.mkdtemp(prefix="rayh-", dir="/tmp")  # short: Ray puts unix sockets under it
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(hermes_env.__file__).resolve().parent.parent)
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    # This user's directories still apply to the container engine (its storage, its configuration) and hermes_env.
    for var, default in (("XDG_CONFIG_HOME", ".config"), ("XDG_CACHE_HOME", ".cache"), ("XDG_DATA_HOME", ".local")):
        env.setdefault(var, os.path.join(os.path.expanduser("~"), default, "share" if default == ".local" else ""))
    env["HOME"] = temp_dir  # a ~/.ray/auth_token left on the host by another Ray session must not apply here
    env["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # Ray's address lookups answer 127.0.0.1 (see the CLI helper)
    port = _free_port()
    common = ["--node-ip-address", "127.0.0.1", "--num-cpus", "1", "--object-store-memory", str(100 * 1024 * 1024)]
    try:
        _ray_start(
            ["--head", "--port", str(port), "--include-dashboard", "false", "--temp-dir", temp_dir,
             "--ray-client-server-port", str(_free_port()), "--dashboard-agent-listen-port", str(_free_port()),
             "--dashboard-port", str(_free_port()),
             "--disable-usage-stats", *common],
            env,
        )  # fmt: skip
        _ray_start(["--address", f"127.0.0.1:{port}", "--dashboard-agent-listen-port", str(_free_port()), *common], env)
        # The driver (this process) must also see itself as 127.0.0.1 to find its local node.
        ray_constants.ENABLE_RAY_CLUSTER = False
        yield f"127.0.0.1:{port}"
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = saved
        if ray.is_initialized():
            ray.shutdown()
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid in _cluster_pids([temp_dir, f"127.0.0.1:{port}"]):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            time.sleep(2)
        shutil.rmtree(temp_dir, ignore_errors=True)
