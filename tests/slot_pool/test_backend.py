"""SandboxBackend through the framework's seam: ``get_backend("sandbox", **options)``."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from hermes_env.backends import ExecutionBackend, get_backend
from hermes_env.backends.sandbox import SandboxBackend
from hermes_env.slot_pool import PoolConfig, SlotPool, ToolExecutor


@pytest.fixture
async def backend() -> AsyncIterator[ExecutionBackend]:
    b = get_backend(
        "sandbox",
        slots_per_worker=4,
        max_workers=2,
        health_interval_s=0.5,
        limits={"max_processes": 32, "max_output_bytes": 4096},
        executor={"max_timeout_s": 20},
    )
    try:
        yield b
    finally:
        await b.aclose()


def test_options_build_the_configs() -> None:
    b = get_backend("sandbox", slots_per_worker=3, allow_network=True, max_output_bytes=999, batch_window_ms=1)
    assert isinstance(b, SandboxBackend)
    assert b.pool.config.slots_per_worker == 3 and b.pool.policy.allow_network is True
    assert b.pool.policy.limits.max_output_bytes == 999 and b.executor.config.batch_window_ms == 1
    with pytest.raises(ValueError, match="options.slots: backend 'sandbox' does not accept option 'slots'.*per_worker"):
        get_backend("sandbox", slots=3)
    with pytest.raises(ValueError, match="min_workers"):
        get_backend("sandbox", min_workers=5, max_workers=2)
    with pytest.raises(ValueError, match="unknown sandbox launcher 'slurm'; valid launchers: local, ray"):
        get_backend("sandbox", launcher="slurm")


def test_old_option_names_still_work_with_a_warning() -> None:
    # README and users' YAML say ``backend: ray``; the option picks a launcher, and is now called so.
    with pytest.warns(FutureWarning) as caught:
        b = get_backend("sandbox", backend="ray", memory_mb=256, ray_address="127.0.0.1:1")
    assert sorted(str(w.message).split(" (")[0] for w in caught) == [
        "resource limit 'memory_mb' is deprecated; use 'memory_bytes'",
        "sandbox pool option 'backend' is deprecated; use 'launcher'",
    ]
    assert isinstance(b, SandboxBackend)
    assert b.pool.config.launcher == "ray" and b.pool.policy.limits.memory_bytes == 256 * 1024**2
    with pytest.warns(FutureWarning):
        assert PoolConfig.model_validate({"backend": "local"}).launcher == "local"
    with pytest.raises(ValueError, match="keep only 'launcher'"):
        PoolConfig(backend="ray", launcher="local")


async def test_execute_files_and_cleanup(backend: ExecutionBackend) -> None:
    await backend.start("t")
    await backend.write_file("t", "d/bin.dat", bytes(range(256)))
    res = await backend.execute("t", "wc -c < d/bin.dat; echo err >&2; exit 4", 10)
    assert res.exit_code == 4 and res.output.split() == ["256", "err"] and res.error is None
    assert await backend.read_file("t", "/workspace/d/bin.dat") == bytes(range(256))
    assert (await backend.execute("t", "tr a-z A-Z", 10, stdin="shout")).output == "SHOUT"
    assert await backend.list_files("t") == ["d/bin.dat"]
    with pytest.raises(FileNotFoundError):
        await backend.read_file("t", "missing")
    # the exception types of the host-workspace backends (local, bwrap), also where the worker's error has no errno
    with pytest.raises(IsADirectoryError):
        await backend.read_file("t", "d")
    with pytest.raises(FileNotFoundError):
        await backend.list_files("t", "missing")
    with pytest.raises(PermissionError):
        await backend.read_file("t", "../../../../etc/passwd")
    with pytest.raises(PermissionError):
        await backend.write_file("t", "../x", b"")
    res = await backend.execute("t", "sleep 30", 0.5)
    assert res.timed_out and not res.ok
    # Two tasks never see each other's files; cleanup empties the workspace and is idempotent.
    assert await backend.list_files("other") == []
    await backend.cleanup("t")
    await backend.cleanup("t")
    assert await backend.list_files("t") == []


async def test_sandbox_tools_through_the_backend(backend: SandboxBackend) -> None:  # type: ignore[override]
    r = await backend.call_tool("s", "bash_stateful", {"command": "cd /tmp && export A=1"})
    assert r.ok
    r = await backend.call_tool("s", "bash_stateful", {"command": "echo $PWD $A"})
    assert r.output.split() == ["/tmp", "1"]


async def test_no_slot_is_an_error_result_not_an_exception(pool_factory) -> None:  # noqa: ANN001
    pool: SlotPool = await pool_factory(slots_per_worker=1, min_workers=1, max_workers=1, acquire_timeout_s=0.3)
    backend = SandboxBackend(pool, ToolExecutor(pool))
    assert (await backend.execute("first", "echo hi", 5)).ok
    res = await backend.execute("second", "echo hi", 5)
    assert not res.ok and res.error is not None and "no sandbox slot" in res.error and "max_workers=1" in res.error
    await backend.executor.close()
