"""Behaviour every host-workspace backend shares: commands, files, timeouts, output limits, cleanup."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hermes_env.backends import ExecutionBackend, get_backend, register_backend
from hermes_env.backends.local import LocalBackend
from hermes_env.backends.registry import backend_names

from tests.support.procs import unique_sleep, wait_gone, wait_no_process_with_cmdline


async def test_command_runs_in_workspace_and_sees_written_files(backend: ExecutionBackend) -> None:
    await backend.write_file("t", "dir/hello.txt", b"hi there\n")
    res = await backend.execute("t", "cat dir/hello.txt && echo made > out.txt", 10)
    assert res.ok, res
    assert res.output == "hi there\n"
    assert await backend.read_file("t", "out.txt") == b"made\n"
    assert await backend.list_files("t") == ["dir/hello.txt", "out.txt"]
    assert await backend.list_files("t", "dir") == ["dir/hello.txt"]


async def test_exit_code_and_stderr_are_reported(backend: ExecutionBackend) -> None:
    res = await backend.execute("t", "echo out; echo err >&2; exit 7", 10)
    assert res.exit_code == 7 and not res.ok and not res.timed_out and res.error is None
    assert "out" in res.output and "err" in res.output


async def test_stdin_is_fed(backend: ExecutionBackend) -> None:
    res = await backend.execute("t", "tr a-z A-Z", 10, stdin="shout\n")
    assert res.output == "SHOUT\n"


async def test_tasks_are_isolated_from_each_other(backend: ExecutionBackend) -> None:
    await backend.write_file("a", "secret.txt", b"A")
    assert await backend.list_files("b") == []
    with pytest.raises(FileNotFoundError):
        await backend.read_file("b", "secret.txt")
    res = await backend.execute("b", "cat secret.txt", 10)
    assert res.exit_code != 0


async def test_hanging_command_times_out_and_is_killed(backend: ExecutionBackend, tmp_path: Path) -> None:
    # The command records its pid, then hangs; after the timeout neither it nor its child may be alive.
    sleep = unique_sleep()
    res = await backend.execute("t", f"{sleep} & echo $! > child.pid; echo $$ > main.pid; wait", 1.0)
    assert res.timed_out and not res.ok and res.exit_code == 124
    assert "timed out" in res.output
    if isinstance(backend, LocalBackend):  # host-visible pids
        for name in ("child.pid", "main.pid"):
            pid = int((await backend.read_file("t", name)).decode())
            await wait_gone(pid)
    else:  # bwrap: pids are namespaced; the namespace is gone, so no sleep of ours remains
        await wait_no_process_with_cmdline(sleep)


async def test_background_job_does_not_make_a_finished_command_hang(backend: ExecutionBackend) -> None:
    res = await backend.execute("t", "sleep 300 & echo started", 30)
    assert res.ok and not res.timed_out and res.output == "started\n"


async def test_output_is_truncated_with_a_note(tmp_path: Path) -> None:
    b = LocalBackend(tmp_path, max_output_bytes=1000, kill_output_bytes=100_000)
    res = await b.execute("t", "head -c 5000 /dev/zero | tr '\\0' x", 10)
    assert res.truncated and res.ok
    assert res.output.startswith("x" * 1000)
    assert "showing the first 1000 of 5000 bytes" in res.output
    # A command that never stops writing is killed once past the kill limit, long before its timeout.
    res = await b.execute("t", "yes", 120)
    assert res.truncated and not res.timed_out and not res.ok
    assert "command stopped" in res.output
    await b.aclose()


async def test_crashed_command_fails_only_that_call(backend: ExecutionBackend) -> None:
    res = await backend.execute("t", "kill -SEGV $$", 10)
    assert not res.ok
    res = await backend.execute("t", "echo still fine", 10)
    assert res.ok and res.output == "still fine\n"


def _host_path(backend: ExecutionBackend, task_id: str) -> Path | None:
    """The task's workspace as a host directory; None where it lives elsewhere (docker: inside its container)."""
    workspace_path = getattr(backend, "workspace_path", None)
    return workspace_path(task_id) if workspace_path is not None else None


async def test_cleanup_removes_workspace_and_is_idempotent(backend: ExecutionBackend) -> None:
    await backend.write_file("t", "f.txt", b"x")
    ws = _host_path(backend, "t")
    assert ws is None or ws.is_dir()
    await backend.cleanup("t")
    await backend.cleanup("t")
    assert ws is None or not ws.exists()
    assert await backend.list_files("t") == []  # a fresh, empty workspace on next use


async def test_cleanup_kills_running_command(backend: ExecutionBackend) -> None:
    task = asyncio.create_task(backend.execute("t", "sleep 300", 120))
    await asyncio.sleep(0.5)
    await backend.cleanup("t")
    res = await asyncio.wait_for(task, 30)
    assert not res.ok


async def test_binary_round_trip(backend: ExecutionBackend) -> None:
    blob = bytes(range(256)) * 40
    await backend.write_file("t", "bin/blob.dat", blob)
    assert await backend.read_file("t", "bin/blob.dat") == blob
    res = await backend.execute("t", "sha256sum bin/blob.dat | cut -c1-64", 10)
    import hashlib

    assert res.output.strip() == hashlib.sha256(blob).hexdigest()


async def test_get_backend_errors_and_registration(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown terminal backend 'nope'.*local"):
        get_backend("nope")
    assert {"local", "bwrap", "sandbox"} <= set(backend_names())
    made: list[dict[str, object]] = []

    def factory(**options: object) -> LocalBackend:
        made.append(options)
        return LocalBackend(tmp_path / "custom")

    register_backend("custom-test", factory)
    b = get_backend("custom-test", flag=1)
    assert isinstance(b, LocalBackend) and made == [{"flag": 1}]
    with pytest.raises(ValueError, match="already registered"):
        register_backend("custom-test", lambda **_: b)
    await b.aclose()


async def test_many_concurrent_commands(backend: ExecutionBackend) -> None:
    results = await asyncio.gather(*(backend.execute(f"t{i}", f"echo {i}", 30) for i in range(24)))
    assert [r.output for r in results] == [f"{i}\n" for i in range(24)]


def test_unknown_backend_option_names_the_valid_ones(tmp_path: Path) -> None:
    with pytest.raises(
        ValueError,
        match=r"terminal_backend_options\.allow_netwrk: backend 'local' does not accept option 'allow_netwrk'.*"
        r"valid options: .*root",
    ):
        get_backend("local", root=tmp_path, allow_netwrk=True)


def test_backends_are_imported_on_first_use() -> None:
    # Naming ``local`` must not import the slot pool (aiohttp, Ray ...): the table holds "module:Class" strings.
    code = (
        "import sys; from hermes_env.backends import get_backend; b = get_backend('local'); "
        "import asyncio; asyncio.run(b.aclose()); "
        "print(sorted(m for m in sys.modules if m.startswith(('hermes_env.slot_pool', 'hermes_env.backends.sandbox'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


async def test_registered_module_class_strings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from hermes_env.backends import registry

    monkeypatch.setattr(registry, "_BACKENDS", dict(registry._BACKENDS))
    register_backend("local-again", "hermes_env.backends.local:LocalBackend")
    b = get_backend("local-again", root=tmp_path / "again", max_output_bytes=1000)
    assert isinstance(b, LocalBackend) and b.limits.max_output_bytes == 1000
    await b.aclose()
    register_backend("ghost", "hermes_env_no_such_module_xyz:Backend")
    with pytest.raises(ValueError, match="backend 'ghost': no module 'hermes_env_no_such_module_xyz' importable"):
        get_backend("ghost")
    with pytest.raises(ValueError, match="'module:Class'"):
        register_backend("bad", "no_colon_here")


async def test_files_written_by_the_host_are_editable_by_commands(backend: ExecutionBackend) -> None:
    await backend.write_file("t", "deep/dir/f.txt", b"v1\n")
    res = await backend.execute("t", "echo v2 >> deep/dir/f.txt && mkdir deep/dir/sub && cat deep/dir/f.txt", 10)
    assert res.ok and res.output == "v1\nv2\n"


async def test_bwrap_root_unreachable_by_the_task_users_is_a_clear_error(tmp_path: Path) -> None:
    from hermes_env.isolation import bwrap_problem

    if bwrap_problem() is not None or os.geteuid() != 0:
        pytest.skip("needs usable bubblewrap and root (tasks have uids of their own only then)")
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    with pytest.raises(ValueError, match="not reachable by the sandbox's task users"):
        get_backend("bwrap", root=private / "ws")


def test_old_limit_names_still_work_with_a_warning(tmp_path: Path) -> None:
    from hermes_env.isolation import ResourceLimits

    with pytest.warns(FutureWarning) as caught:
        limits = ResourceLimits(memory_mb=512, max_file_bytes_written=4096)
    assert sorted(str(w.message).split(";")[0] for w in caught) == [
        "resource limit 'max_file_bytes_written' is deprecated",
        "resource limit 'memory_mb' is deprecated",
    ]
    assert limits.memory_bytes == 512 * 1024**2 and limits.max_file_bytes == 4096
    assert ResourceLimits(memory_bytes="1GiB").memory_bytes == 1024**3
    with pytest.raises(ValueError, match="keep only 'memory_bytes'"):
        ResourceLimits(memory_mb=512, memory_bytes=1024**3)


async def test_cleanup_copes_with_locked_down_directories(backend: ExecutionBackend) -> None:
    res = await backend.execute("t", "mkdir -p a/b && touch a/b/f && chmod 000 a/b && chmod 500 a", 10)
    assert res.ok, res
    ws = _host_path(backend, "t")
    await backend.cleanup("t")
    assert ws is None or not ws.exists()
    assert await backend.list_files("t") == []
