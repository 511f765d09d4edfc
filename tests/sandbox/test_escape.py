"""Escape attempts from a slot: each is refused or contained, and the test shows it."""

from __future__ import annotations

import asyncio
import os
import socket
from pathlib import Path

import aiohttp
from hermes_env.sandbox import SandboxPolicy, SlotPool, ToolExecutor, decode_content
from hermes_env.sandbox.config import ResourceLimits
from hermes_env.sandbox.slots import _live_pids_of

TEST_LIMITS = ResourceLimits(cpu_seconds=10, memory_mb=512, max_processes=32, max_output_bytes=4096)  # as conftest


async def _slot_dirs(executor: ToolExecutor, trajectory_id: str) -> Path:
    lease = await executor.pool.acquire(trajectory_id)
    async with aiohttp.ClientSession(headers=executor.pool.auth_headers) as s, s.get(lease.url + "/slots") as resp:
        slots = (await resp.json())["slots"]
    return Path(slots[lease.slot]["workspace"])


async def test_dotdot_and_absolute_paths_stay_in_the_workspace(executor: ToolExecutor, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("host secret")
    ws = await _slot_dirs(executor, "p")
    rel_to_outside = os.path.relpath(outside, ws)
    r = await executor.execute("p", "read_file", {"path": rel_to_outside})
    assert r.error_type == "permission_denied" and "outside the workspace" in r.output
    r = await executor.execute("p", "write_file", {"path": "../../escaped.txt", "content": "x"})
    assert r.error_type == "permission_denied"
    assert not (ws.parent.parent / "escaped.txt").exists()
    # Absolute paths are workspace-rooted: /etc/passwd names <workspace>/etc/passwd, which does not exist.
    r = await executor.execute("p", "read_file", {"path": "/etc/passwd"})
    assert r.error_type == "not_found"
    r = await executor.execute("p", "write_file", {"path": str(outside), "content": "overwritten"})
    assert r.ok and outside.read_text() == "host secret"
    assert (ws / str(outside).lstrip("/")).read_text() == "overwritten"
    # Inside the sandbox the host's files are simply not there, and the system is read-only.
    r = await executor.execute("p", "bash", {"command": f"cat {outside}; ls /work /root 2>&1; touch /usr/x"})
    assert "host secret" not in r.output and "No such file" in r.output and "Read-only file system" in r.output


async def test_symlinks_out_of_the_workspace_are_refused(executor: ToolExecutor, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("host secret")
    os.chmod(tmp_path, 0o755)
    r = await executor.execute("l", "bash", {"command": f"ln -s {secret} link; ln -s / rootlink; ln -s /etc/passwd pw"})
    assert r.ok, r.output
    for path in ("link", "rootlink/etc/passwd", "pw"):
        r = await executor.execute("l", "read_file", {"path": path})
        assert r.error_type == "permission_denied", (path, r)
    r = await executor.execute("l", "write_file", {"path": "rootlink/tmp/pwned", "content": "x"})
    assert r.error_type == "permission_denied"
    assert not Path("/tmp/pwned").exists()
    listed = await executor.list_artifacts("l")
    assert listed.ok and listed.data["files"] == []  # links are not listed as files, nor followed
    # A symlink that stays inside is fine.
    await executor.execute("l", "bash", {"command": "echo inside > real; ln -s real alias"})
    assert decode_content(await executor.execute("l", "read_file", {"path": "alias"})) == b"inside\n"


async def test_a_slot_cannot_read_another_slots_files(executor: ToolExecutor) -> None:
    await executor.execute("a", "bash", {"command": "echo top-secret > mine.txt"})
    ws_a = await _slot_dirs(executor, "a")
    ws_b = await _slot_dirs(executor, "b")
    assert ws_a != ws_b
    r = await executor.execute("b", "bash", {"command": f"cat {ws_a}/mine.txt; cat /workspace/../*/mine.txt; ls /"})
    assert "top-secret" not in r.output
    rel = os.path.relpath(ws_a / "mine.txt", ws_b)
    r = await executor.execute("b", "read_file", {"path": rel})
    assert r.error_type == "permission_denied"
    # Control: the owner reads it fine.
    assert (await executor.execute("a", "read_file", {"path": "mine.txt"})).output == "top-secret\n"


def _listener() -> tuple[socket.socket, int]:
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.settimeout(0.2)
    return srv, srv.getsockname()[1]


def _accepted(srv: socket.socket) -> bool:
    try:
        conn, _ = srv.accept()
    except TimeoutError:
        return False
    conn.close()
    return True


async def _connect_attempt(executor: ToolExecutor, trajectory_id: str, port: int) -> str:
    cmd = f"timeout 5 bash -c 'echo hi > /dev/tcp/127.0.0.1/{port}' && echo CONNECTED || echo REFUSED"
    return (await executor.execute(trajectory_id, "bash", {"command": cmd})).output


async def test_host_loopback_is_unreachable_without_network(executor: ToolExecutor, pool_factory) -> None:  # noqa: ANN001
    srv, port = _listener()
    try:
        out = await _connect_attempt(executor, "net", port)
        assert "REFUSED" in out and "CONNECTED" not in out
        assert not _accepted(srv)
        # Control: the same command reaches the host when the environment allows the network.
        open_pool: SlotPool = await pool_factory(policy=SandboxPolicy(allow_network=True, limits=TEST_LIMITS))
        async with ToolExecutor(open_pool) as open_ex:
            out = await _connect_attempt(open_ex, "net", port)
        assert "CONNECTED" in out
        assert await asyncio.to_thread(_accepted, srv)
    finally:
        srv.close()


async def test_fork_bomb_is_contained_by_the_process_limit(executor: ToolExecutor) -> None:
    # Many sleepers: beyond max_processes the kernel refuses the fork.
    script = (
        "import os, time\n"
        "kids, err = 0, None\n"
        "for _ in range(100):\n"
        "    try:\n"
        "        pid = os.fork()\n"
        "    except OSError as e:\n"
        "        err = e.strerror\n"
        "        break\n"
        "    if pid == 0:\n"
        "        time.sleep(2)\n"
        "        os._exit(0)\n"
        "    kids += 1\n"
        "print('forked', kids, 'then', err)\n"
    )
    r = await executor.execute("fb", "write_file", {"path": "forks.py", "content": script})
    r = await executor.execute("fb", "bash", {"command": "python3 forks.py"})
    words = r.output.split()
    assert words[0] == "forked" and int(words[1]) < TEST_LIMITS.max_processes, r.output
    assert "Resource temporarily unavailable" in r.output
    bomb = await executor.execute("fb", "bash", {"command": ":(){ :|:& };:; sleep 2; echo survived"}, timeout=6)
    assert bomb.error is None  # the call returned (exit status or timeout), the worker is fine
    # Another trajectory on the pool is unaffected while and after the bomb ran.
    other = await executor.execute("calm", "bash", {"command": "echo fine"})
    assert other.ok and other.output == "fine\n"
    lease = executor.pool.lease_of("fb")
    assert lease is not None
    async with aiohttp.ClientSession(headers=executor.pool.auth_headers) as s, s.get(lease.url + "/slots") as resp:
        uid = (await resp.json())["slots"][lease.slot]["uid"]
    assert uid is not None and uid != os.getuid()
    await executor.release_trajectory("fb")
    # Release killed everything the bomb left: no process of that slot's uid remains.
    assert _live_pids_of(uid) == []


async def test_unbounded_output_is_truncated_and_stopped(executor: ToolExecutor) -> None:
    r = await executor.execute("out", "bash", {"command": "yes"}, timeout=15)
    assert r.truncated and not r.timed_out
    assert len(r.output.encode()) < TEST_LIMITS.max_output_bytes + 300
    assert "output truncated" in r.output and "stopped" in r.output
    r = await executor.execute("out", "bash_stateful", {"command": "head -c 50000 /dev/zero | tr '\\0' a; echo"})
    assert r.truncated and r.exit_code == 0 and len(r.output) < TEST_LIMITS.max_output_bytes + 300


async def test_memory_and_cpu_limits_apply(pool_factory) -> None:  # noqa: ANN001
    limits = ResourceLimits(cpu_seconds=1, memory_mb=256, max_processes=32, max_output_bytes=4096)
    tight: SlotPool = await pool_factory(policy=SandboxPolicy(limits=limits))
    async with ToolExecutor(tight) as ex:
        r = await ex.execute("m", "bash", {"command": "python3 -c 'x = bytearray(512 * 1024 * 1024)'"})
        assert r.exit_code != 0 and "MemoryError" in r.output
        r = await ex.execute("m", "bash", {"command": "python3 -c 'x = bytearray(64 * 1024 * 1024); print(len(x))'"})
        assert r.ok and r.output.strip() == str(64 * 1024 * 1024)
        r = await ex.execute("m", "bash", {"command": "python3 -c 'while True: pass'; echo status=$?"}, timeout=20)
        assert not r.timed_out and ("status=152" in r.output or "status=137" in r.output)  # SIGXCPU / SIGKILL


async def test_extra_read_only_paths_are_visible_but_not_writable(pool_factory) -> None:  # noqa: ANN001
    import tempfile

    shared = Path(tempfile.mkdtemp(prefix="hermes-ro-"))
    shared.chmod(0o755)
    (shared / "data.txt").write_text("reference data")
    (shared / "data.txt").chmod(0o644)
    try:
        pool: SlotPool = await pool_factory(policy=SandboxPolicy(limits=TEST_LIMITS, ro_paths=(str(shared),)))
        async with ToolExecutor(pool) as ex:
            r = await ex.execute("ro", "bash", {"command": f"cat {shared}/data.txt; echo x > {shared}/new 2>&1"})
        assert r.output.startswith("reference data") and "Read-only file system" in r.output
        assert not (shared / "new").exists()
    finally:
        import shutil

        shutil.rmtree(shared)
