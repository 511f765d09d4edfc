"""The reaper: orphaned sandbox processes are reaped (or killed, if still running) by the process that started them,
also when it is PID 1, and no exit status is taken from a child someone else waits for."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hermes_env.isolation import reaper
from hermes_env.isolation.process import spawn
from hermes_env.isolation.users import UidBlock

ROOT = Path(__file__).resolve().parents[2]
AS_ROOT = os.geteuid() == 0


async def test_no_exit_status_is_taken_from_its_owner() -> None:
    # Children of every kind exit at once with status 7 while reap passes run back to back in another thread:
    # a reaper that took any zombie child it did not start would hand their owners ECHILD (status 0 or 255).
    reaper.start()
    stop = threading.Event()

    def hammer() -> None:
        while not stop.is_set():
            reaper.reap_orphans()

    thread = threading.Thread(target=hammer)
    thread.start()
    uids = UidBlock()
    try:
        user = uids.user(3) if AS_ROOT else None

        async def by_spawn() -> int | None:  # as a sandbox task user, registered
            proc = await spawn("/bin/sh", "-c", "exit 7", user=user)
            return await proc.wait()

        async def by_asyncio() -> int | None:
            proc = await asyncio.create_subprocess_exec("/bin/sh", "-c", "exit 7")
            return await proc.wait()

        def by_subprocess() -> int:
            return subprocess.run(["/bin/sh", "-c", "exit 7"], check=False).returncode

        codes = await asyncio.gather(
            *(by_spawn() for _ in range(40)),
            *(by_asyncio() for _ in range(40)),
            *(asyncio.to_thread(by_subprocess) for _ in range(40)),
        )
    finally:
        stop.set()
        thread.join()
        uids.release()
    assert codes == [7] * 120


# A process that starts sandboxes (as PID 1, or as an ordinary process) and loses their monitors in three ways, and
# a container engine's daemon that is orphaned to it; it prints its children as they stand after the reaper has had
# time to act.
_ORPHANS = r"""
import asyncio, json, os, shutil, signal, subprocess, sys, tempfile, time
from hermes_env.isolation import reaper
from hermes_env.isolation.bubblewrap import HOST_ENV, BwrapSpec
from hermes_env.isolation.process import children, spawn
from hermes_env.isolation.users import UidBlock

def state(pid):
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None

async def main():
    assert reaper.start()
    orphans = []
    # 1. a monitor killed before its sandbox asked to die with it: the sandbox outlives it, in its PID namespace
    setup = subprocess.Popen(["unshare", "--pid", "--fork", "sleep", "300"])
    while not children(setup.pid):
        time.sleep(0.01)
    orphans += children(setup.pid)
    setup.kill(); setup.wait()
    # 2. a real bubblewrap sandbox whose monitor is SIGKILLed while its command runs
    ws = tempfile.mkdtemp(); os.chmod(ws, 0o777)
    proc = await spawn(*BwrapSpec(ws).argv(["sleep", "300"]), env=HOST_ENV)
    while not children(proc.pid):
        await asyncio.sleep(0.01)
    orphans += children(proc.pid)
    os.kill(proc.pid, signal.SIGKILL); await proc.wait()
    # 3. (as root) a dead worker's process under a task uid, orphaned in our own PID namespace, then killed
    uids = UidBlock()
    if uids.distinct:
        uid = uids.user(1).uid
        worker = subprocess.Popen(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "sh", "-c",
                                   "sleep 300 >/dev/null 2>&1 & echo $!"], stdout=subprocess.PIPE, text=True)
        pid = int(worker.stdout.readline()); worker.wait()
        os.kill(pid, signal.SIGKILL)
        orphans.append(pid)
    # 4. a container engine's monitor (podman's conmon forks twice to daemonize): ours once orphaned, then exits
    bindir = tempfile.mkdtemp(); os.symlink(shutil.which("sleep"), f"{bindir}/conmon")
    started = subprocess.run(["sh", "-c", f"{bindir}/conmon 0.5 >/dev/null 2>&1 & echo $!"], capture_output=True,
                             text=True, check=True)
    orphans.append(int(started.stdout))
    time.sleep(3 * reaper.INTERVAL_S + 1.0)
    mine = {pid: state(pid) for pid in children(os.getpid())}
    print(json.dumps({"pid": os.getpid(), "orphans": {p: state(p) for p in orphans}, "children": mine}))
    uids.release()

asyncio.run(main())
"""


@pytest.mark.parametrize("as_pid_1", [False, True], ids=["subreaper", "pid-1"])
def test_orphaned_sandboxes_are_killed_and_reaped(as_pid_1: bool, tmp_path: Path) -> None:
    if shutil.which("bwrap") is None or shutil.which("unshare") is None:
        pytest.skip("needs bwrap and unshare")
    script = tmp_path / "orphans.py"
    script.write_text(_ORPHANS)
    argv = [sys.executable, str(script)]
    if as_pid_1:
        if not AS_ROOT:
            pytest.skip("a new PID namespace with its own /proc needs root")
        argv = ["unshare", "--pid", "--fork", "--mount-proc", *argv]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env, check=False)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert (report["pid"] == 1) is as_pid_1
    assert len(report["orphans"]) == (4 if AS_ROOT else 3)
    assert set(report["orphans"].values()) == {None}, report  # gone: not running, not a zombie
    assert "Z" not in report["children"].values(), report
