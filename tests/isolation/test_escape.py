"""Escape attempts, each refused or contained, on both sandboxing backends (``bwrap`` and the ``sandbox`` pool).

Every test takes ``sandboxed`` (or ``make_sandboxed``) and so runs once per backend: a hardening fix
is made once, in ``hermes_env.isolation``, and shown here for both.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import tempfile
from pathlib import Path

import pytest
from hermes_env.backends import ExecutionBackend
from hermes_env.errors import WorkspacePathError
from hermes_env.isolation.users import live_pids_of

from tests.support.procs import processes_of_uid, unique_sleep, wait_no_process_with_cmdline, wait_uid_has_no_process

from .conftest import LIMITS, MakeBackend, host_workspace

AS_ROOT = os.geteuid() == 0


async def run(backend: ExecutionBackend, task: str, command: str, timeout: float = 20) -> str:
    return (await backend.execute(task, command, timeout)).output


# -- host-side file methods -------------------------------------------------------------------
@pytest.mark.parametrize("path", ["../outside.txt", "a/../../outside.txt", "../../../../etc/passwd", "/workspace/.."])
async def test_dotdot_is_refused(sandboxed: ExecutionBackend, path: str) -> None:
    with pytest.raises(WorkspacePathError, match="escapes the workspace"):
        await sandboxed.read_file("t", path)
    with pytest.raises(WorkspacePathError, match="escapes the workspace"):
        await sandboxed.write_file("t", path, b"x")


async def test_absolute_paths_outside_the_workspace_are_refused(sandboxed: ExecutionBackend) -> None:
    # The commands see /tmp, /etc ... of their sandbox: writing "/tmp/x" into the workspace instead
    # would leave the model looking for a file where it is not. Refused, with a message saying what to do.
    # bwrap gives each task a root of its own for absolute paths outside the system directories (see
    # test_task_root_holds_absolute_paths); the system directories stay refused there too.
    own_root = sandboxed.name == "bwrap"
    for path in ("/tmp/x", "/etc/passwd", *(() if own_root else ("/workspacefoo/x",))):
        message = "system directories are read-only" if own_root else "use a path relative to the workspace or under"
        with pytest.raises(WorkspacePathError, match=message):
            await sandboxed.write_file("t", path, b"x")
        with pytest.raises(WorkspacePathError):
            await sandboxed.read_file("t", path)
    with pytest.raises(WorkspacePathError):
        await sandboxed.list_files("t", "/etc")
    # The workspace's own absolute paths work, and are the files the commands see.
    await sandboxed.write_file("t", "/workspace/d/f.txt", b"inside")
    assert await sandboxed.read_file("t", "d/f.txt") == b"inside"
    assert await run(sandboxed, "t", "cat /workspace/d/f.txt") == "inside"
    assert await sandboxed.list_files("t", "/workspace") == ["d/f.txt"]


async def test_symlinks_pointing_out_are_refused(sandboxed: ExecutionBackend) -> None:
    made = await sandboxed.execute(
        "t", "ln -s /etc/passwd pw && ln -s / rootlink && ln -s .. up && mkdir d && ln -s ../.. d/upup", 20
    )
    assert made.ok, made
    for path in ("pw", "rootlink/etc/passwd", "up/anything", "d/upup/etc/hostname"):
        with pytest.raises(WorkspacePathError):
            await sandboxed.read_file("t", path)
    for path in ("rootlink/tmp/pwned", "pw", "up/pwned"):
        with pytest.raises(WorkspacePathError):
            await sandboxed.write_file("t", path, b"x")
    with pytest.raises(WorkspacePathError):
        await sandboxed.list_files("t", "rootlink")
    assert not Path("/tmp/pwned").exists()
    assert await sandboxed.list_files("t") == []  # links are neither listed as files nor followed


async def test_symlink_that_stays_inside_is_fine(sandboxed: ExecutionBackend) -> None:
    await sandboxed.write_file("t", "real/data.txt", b"ok")
    assert (await sandboxed.execute("t", "ln -s real alias && ln -s real/data.txt f", 20)).ok
    assert await sandboxed.read_file("t", "alias/data.txt") == b"ok"
    assert await sandboxed.read_file("t", "f") == b"ok"


# -- commands ---------------------------------------------------------------------------------
async def test_commands_cannot_see_host_files_and_the_system_is_read_only(sandboxed: ExecutionBackend) -> None:
    secret_dir = Path(tempfile.mkdtemp(prefix="hermes-secret-"))
    try:
        secret_dir.chmod(0o755)
        (secret_dir / "secret.txt").write_text("host secret")
        (secret_dir / "secret.txt").chmod(0o644)  # readable by anyone who can see it
        out = await run(sandboxed, "t", f"cat {secret_dir}/secret.txt; ls /root /home /work 2>&1; cat ../*/* 2>&1")
        assert "host secret" not in out and "No such file" in out
        out = await run(sandboxed, "t", "touch /usr/evil; echo x > /etc/passwd; echo rc=$?")
        assert "Read-only file system" in out and "rc=0" not in out
        assert not Path("/usr/evil").exists()
    finally:
        shutil.rmtree(secret_dir)


async def test_a_task_cannot_reach_another_tasks_workspace(sandboxed: ExecutionBackend) -> None:
    await sandboxed.write_file("a", "mine.txt", b"task a secret")
    host_a = await host_workspace(sandboxed, "a")
    out = await run(sandboxed, "b", f"cat {host_a}/mine.txt; cat /workspace/../*/mine.txt; find / -name mine.txt")
    assert "task a secret" not in out
    with pytest.raises(WorkspacePathError):
        await sandboxed.read_file("b", os.path.relpath(host_a / "mine.txt", await host_workspace(sandboxed, "b")))
    assert await sandboxed.read_file("a", "mine.txt") == b"task a secret"  # control: the owner reads it


@pytest.mark.skipif(not AS_ROOT, reason="tasks get uids of their own only when running as root")
async def test_each_task_runs_as_its_own_user(sandboxed: ExecutionBackend) -> None:
    await sandboxed.write_file("a", "f", b"a")
    await sandboxed.write_file("b", "f", b"b")
    ids = {t: (await run(sandboxed, t, "id -u; stat -c '%u %a' /workspace /workspace/f")).split() for t in "ab"}
    for t in "ab":
        uid, ws_owner, ws_mode, f_owner, _ = ids[t]
        assert uid == ws_owner == f_owner and int(uid) != 0 and ws_mode == "700", ids
    assert ids["a"][0] != ids["b"][0]  # not one shared uid: isolation does not rest on namespaces alone
    host_a = await host_workspace(sandboxed, "a")
    assert host_a.stat().st_uid == int(ids["a"][0]) and host_a.stat().st_mode & 0o777 == 0o700


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


async def test_host_loopback_is_unreachable_unless_the_network_is_allowed(make_sandboxed: MakeBackend) -> None:
    srv, port = _listener()
    connect = f"timeout 5 bash -c 'echo hi > /dev/tcp/127.0.0.1/{port}' && echo CONNECTED || echo REFUSED"
    try:
        out = await run(make_sandboxed(), "net", connect)
        assert "REFUSED" in out and "CONNECTED" not in out
        assert not _accepted(srv)  # nothing ever reached the host's listener
        # Control: the same command reaches the host when the environment allows the network.
        out = await run(make_sandboxed(allow_network=True), "net", connect)
        assert "CONNECTED" in out
        assert await asyncio.to_thread(_accepted, srv)
    finally:
        srv.close()


async def test_pid_namespace_hides_host_processes(sandboxed: ExecutionBackend) -> None:
    out = await run(sandboxed, "t", "ls /proc | grep -c '^[0-9]'")
    assert int(out) < 10  # only the sandbox's own few processes


async def test_fork_bomb_is_contained_by_the_process_limit(sandboxed: ExecutionBackend) -> None:
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
    await sandboxed.write_file("fb", "forks.py", script.encode())
    words = (await run(sandboxed, "fb", "python3 forks.py")).split()
    assert words[0] == "forked" and int(words[1]) < LIMITS["max_processes"], words
    assert "Resource temporarily unavailable" in " ".join(words)
    uid = int(await run(sandboxed, "fb", "id -u"))
    bomb = await sandboxed.execute("fb", ":(){ :|:& };:; sleep 2; echo survived", 6)
    assert bomb.error is None  # the call returned (exit status or timeout); the sandbox host is fine
    # Another task is unaffected, during and after.
    other = await sandboxed.execute("calm", "echo fine", 20)
    assert other.ok and other.output == "fine\n"
    await sandboxed.cleanup("fb")
    if AS_ROOT:
        assert live_pids_of(uid) == []  # cleanup killed everything the bomb left


async def test_a_call_leaves_no_process_behind_not_even_a_zombie(make_sandboxed: MakeBackend) -> None:
    # bwrap's own init outlived its monitor, leaving each call's init a zombie for the host's init to reap;
    # they counted against the task's process limit until then ("Can't fork for pid 1" after a burst of
    # calls where the host's init is slow). Many calls in a row on one task, with a small limit.
    backend = make_sandboxed(max_processes=8)  # a call needs 5: monitor, init, shell, echo, cat
    uid = int(await run(backend, "burst", "id -u"))
    if AS_ROOT:
        # The uid may be one an earlier test's fork bomb ran as: its orphans are the host init's to reap.
        await wait_uid_has_no_process(uid)
    for i in range(16):
        r = await backend.execute("burst", f"echo {i} | cat", 20)
        assert r.ok and r.output == f"{i}\n", r
        if AS_ROOT:
            assert processes_of_uid(uid) == [], i


async def test_unbounded_output_is_cut_and_the_command_stopped(sandboxed: ExecutionBackend) -> None:
    r = await sandboxed.execute("out", "yes", 15)
    assert r.truncated and not r.timed_out and not r.ok
    assert len(r.output.encode()) < LIMITS["max_output_bytes"] + 300
    assert "output truncated" in r.output and "command stopped" in r.output


async def test_memory_cpu_and_file_size_limits(make_sandboxed: MakeBackend) -> None:
    tight = make_sandboxed(cpu_seconds=1, memory_bytes="256MiB", max_file_bytes="1MiB")
    r = await tight.execute("m", "python3 -c 'x = bytearray(512 * 1024 * 1024)'", 20)
    assert r.exit_code != 0 and "MemoryError" in r.output
    r = await tight.execute("m", "python3 -c 'x = bytearray(64 * 1024 * 1024); print(len(x))'", 20)
    assert r.ok and r.output.strip() == str(64 * 1024 * 1024)
    r = await tight.execute("m", "python3 -c 'while True: pass'; echo status=$?", 20)
    assert not r.timed_out and ("status=152" in r.output or "status=137" in r.output)  # SIGXCPU / SIGKILL
    r = await tight.execute("m", "head -c 5000000 /dev/zero > big.bin; echo status=$?", 20)
    assert "status=153" in r.output  # SIGXFSZ
    assert len(await tight.read_file("m", "big.bin")) == 1024 * 1024


async def test_tmp_is_private_to_each_call_and_size_limited(sandboxed: ExecutionBackend) -> None:
    out = await run(sandboxed, "t", "pwd; echo $HOME; touch /tmp/x && echo tmp-ok")
    assert out.split() == ["/workspace", "/workspace", "tmp-ok"]
    assert await run(sandboxed, "t", "ls /tmp") == ""
    out = await run(sandboxed, "t", "head -c 20000000 /dev/zero > /tmp/fill; echo status=$?")
    assert "No space left on device" in out and "status=1" in out


async def test_time_limit_kills_the_whole_namespace(sandboxed: ExecutionBackend) -> None:
    # The backgrounded subshell is not waited for; only tearing down the PID namespace ends its sleep.
    orphan, waited = unique_sleep(), unique_sleep()
    r = await sandboxed.execute("t", f"({orphan}; echo late) & {waited}", 1)
    assert r.timed_out and r.exit_code == 124 and "late" not in r.output
    await wait_no_process_with_cmdline(orphan)
    await wait_no_process_with_cmdline(waited)


async def test_extra_read_only_paths_are_visible_but_not_writable(make_sandboxed: MakeBackend) -> None:
    shared = Path(tempfile.mkdtemp(prefix="hermes-ro-"))
    try:
        shared.chmod(0o755)
        (shared / "data.txt").write_text("reference data")
        (shared / "data.txt").chmod(0o644)
        backend = make_sandboxed(ro_paths=(str(shared),))
        out = await run(backend, "ro", f"cat {shared}/data.txt; echo x > {shared}/new")
        assert out.startswith("reference data") and "Read-only file system" in out
        assert not (shared / "new").exists()
    finally:
        shutil.rmtree(shared)
