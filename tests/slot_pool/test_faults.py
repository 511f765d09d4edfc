"""Pool faults: a worker killed mid-batch, acquisition beyond capacity, scaling, workers that cannot start."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
from pathlib import Path

import pytest
from hermes_env.errors import SlotAcquireTimeout, WorkerStartError
from hermes_env.isolation.users import task_user
from hermes_env.slot_pool import ExecutorConfig, SandboxPolicy, SlotPool, ToolExecutor
from hermes_env.slot_pool.config import ResourceLimits

from tests.slot_pool.sandbox_pools import pools
from tests.support.procs import pids_running, pids_with_cmdline, wait_gone


async def _wait_until(predicate, what: str, limit: float = 30.0) -> None:  # noqa: ANN001
    for _ in range(int(limit / 0.1)):
        if predicate():
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"gave up waiting for {what}")


@pytest.fixture(params=["local", pytest.param("container", marks=pytest.mark.containers)])
async def pool_factory(request: pytest.FixtureRequest):  # noqa: ANN201
    """The pool's fault tests run with workers as local processes and as containers (the container launcher)."""
    async with pools(launcher=request.param) as factory:
        yield factory


async def test_worker_killed_mid_batch(pool_factory) -> None:  # noqa: ANN001
    pool: SlotPool = await pool_factory(slots_per_worker=2, min_workers=2, max_workers=2)
    async with ToolExecutor(pool, ExecutorConfig(max_timeout_s=60, transport_grace_s=5)) as ex:
        await ex.execute("victim", "bash", {"command": "echo mine > v.txt"})
        await ex.execute("bystander", "bash", {"command": "echo safe > b.txt"})
        victim, bystander = pool.lease_of("victim"), pool.lease_of("bystander")
        assert victim is not None and bystander is not None and victim.worker_id != bystander.worker_id
        dead = pool.worker(victim.worker_id)
        assert dead is not None and dead.pid is not None
        dead_root = str(dead.spec.root)

        calls = asyncio.gather(
            ex.execute("victim", "bash", {"command": "sleep 40; echo never"}, timeout=30),
            ex.execute("victim", "bash", {"command": "echo queued-behind"}, timeout=30),
        )
        # Killed while the command runs, not while its sandbox is still being set up (bwrap's first process asks
        # to die with its parent only once its mounts are made).
        await _wait_until(lambda: len(pids_running("sleep", "40")) > 0, "the victim's command to start")
        victim_sleeps = pids_running("sleep", "40")
        os.kill(dead.pid, signal.SIGKILL)
        results = await calls
        for r in results:
            assert r.error_type == "worker_lost" and not r.ok, r
            assert victim.worker_id in (r.error or "")

        # The pool replaced the worker; the victim's next call runs on a fresh slot and says so.
        def replaced() -> bool:
            return len(pool.workers) == 2 and victim.worker_id not in {w.worker_id for w in pool.workers}

        await _wait_until(replaced, "the dead worker to be replaced")
        again = await ex.execute("victim", "bash", {"command": "ls; echo alive"})
        assert again.ok and "alive" in again.output and "v.txt" not in again.output
        assert again.data.get("workspace_replaced") is True
        new_lease = pool.lease_of("victim")
        assert new_lease is not None and new_lease.worker_id != victim.worker_id

        # The other trajectory never noticed.
        other = await ex.execute("bystander", "bash", {"command": "cat b.txt"})
        assert other.ok and other.output == "safe\n" and pool.lease_of("bystander") == bystander

        # Nothing of the dead worker is left running: no server, no sandbox, no sleep.
        await _wait_until(lambda: not pids_with_cmdline(dead_root), "the dead worker's processes to exit", 10)
        for pid in victim_sleeps:
            await wait_gone(pid)


async def test_acquire_beyond_capacity_waits_scales_then_times_out(pool_factory) -> None:  # noqa: ANN001
    pool: SlotPool = await pool_factory(slots_per_worker=1, min_workers=1, max_workers=2, scale_down_cooldown_s=0.5)
    first = await pool.acquire("t1")
    assert len(pool.workers) == 1
    second = await pool.acquire("t2", timeout=60)  # waits while a second worker starts
    assert len(pool.workers) == 2 and second.worker_id != first.worker_id

    with pytest.raises(SlotAcquireTimeout) as info:
        await pool.acquire("t3", timeout=0.5)
    msg = str(info.value)
    assert "t3" in msg and "max_workers=2" in msg and "2 leased" in msg

    # A waiter gets the slot as soon as one is released.
    waiter = asyncio.create_task(pool.acquire("t3", timeout=60))
    await asyncio.sleep(0.2)
    assert not waiter.done()
    await pool.release("t1")
    third = await waiter
    assert third.worker_id == first.worker_id and third.slot == first.slot

    # Idle workers above min_workers stop after the cooldown.
    await pool.release("t2")
    await _wait_until(lambda: len(pool.workers) == 1, "an idle worker to be stopped")
    assert pool.workers[0].worker_id == first.worker_id  # the one still leased stays


async def test_required_sandbox_that_cannot_run_is_a_clear_error(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    from hermes_env.slot_pool import PoolConfig

    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap, no prlimit on the worker's PATH
    pool = SlotPool(PoolConfig(slots_per_worker=1, min_workers=1, max_workers=1), SandboxPolicy(require_sandbox=True))
    with pytest.raises(WorkerStartError) as info:
        await pool.start()
    assert "bwrap" in str(info.value) and "require_sandbox" in str(info.value)
    await pool.close()


async def test_unsandboxed_fallback_only_when_the_environment_allows_it(monkeypatch) -> None:  # noqa: ANN001
    import shutil
    import tempfile

    from hermes_env.slot_pool import PoolConfig

    bindir = Path(tempfile.mkdtemp(prefix="hermes-test-bin-"))
    bindir.chmod(0o755)  # the slot's user runs prlimit from here
    (bindir / "prlimit").symlink_to("/usr/bin/prlimit")
    monkeypatch.setenv("PATH", str(bindir))
    limits = ResourceLimits(max_processes=32)
    pool = SlotPool(PoolConfig(slots_per_worker=1, min_workers=1), SandboxPolicy(require_sandbox=False, limits=limits))
    async with pool, ToolExecutor(pool) as ex:
        r = await ex.execute("u", "bash", {"command": "pwd"})
        assert r.ok and r.output.strip().endswith("/slots/0")  # ran directly in the workspace, no /workspace mount
    shutil.rmtree(bindir)


async def test_hung_worker_is_given_up_on_and_replaced(pool_factory) -> None:  # noqa: ANN001
    pool: SlotPool = await pool_factory(slots_per_worker=2, min_workers=1, max_workers=1, health_interval_s=0.5)
    async with ToolExecutor(pool, ExecutorConfig(transport_grace_s=1.0)) as ex:
        assert (await ex.execute("h", "bash", {"command": "true"})).ok
        lease = pool.lease_of("h")
        assert lease is not None
        hung = pool.worker(lease.worker_id)
        assert hung is not None and hung.pid is not None
        os.kill(hung.pid, signal.SIGSTOP)  # alive, but answers nothing
        try:
            r = await ex.execute("h", "bash", {"command": "echo never"}, timeout=2)
            assert r.error_type == "worker_lost" and not r.ok, r
            await _wait_until(lambda: lease.worker_id not in {w.worker_id for w in pool.workers}, "replacement")
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(hung.pid, signal.SIGCONT)
        r = await ex.execute("h", "bash", {"command": "echo back"})
        assert r.ok and r.output.endswith("fresh workspace]\nback\n") and r.data.get("workspace_replaced") is True
        await _wait_until(lambda: not pids_with_cmdline(str(hung.spec.root)), "the hung worker to be gone", 10)


@pytest.mark.skipif(os.geteuid() != 0, reason="slots have uids of their own only as root")
async def test_a_dead_workers_slot_users_are_cleared_when_it_is_replaced() -> None:
    # A sandbox that was being set up when its worker was SIGKILLed may miss its parent-death signal and run on
    # under the slot's uid. Stand-in: a process of that uid outside any sandbox, which nothing else would stop.
    async with pools(launcher="local") as factory:
        pool: SlotPool = await factory(slots_per_worker=2, min_workers=1, max_workers=1)
        lease = await pool.acquire("t")
        dead = pool.worker(lease.worker_id)
        assert dead is not None and dead.pid is not None
        uid = task_user(dead.spec.uid_base, dead.spec.index * dead.spec.slots + lease.slot).uid
        survivor = subprocess.Popen(
            ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "sleep", "300"], start_new_session=True
        )
        try:
            os.kill(dead.pid, signal.SIGKILL)
            await _wait_until(lambda: lease.worker_id not in {w.worker_id for w in pool.workers}, "replacement")
            await _wait_until(lambda: survivor.poll() is not None, "the dead worker's slot user to be cleared", 10)
            assert survivor.returncode == -signal.SIGKILL
        finally:
            survivor.kill()
            survivor.wait()
