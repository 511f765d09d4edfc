"""Escape attempts: file methods on both backends, and commands inside bubblewrap."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from hermes_env.backends import ExecutionBackend, WorkspacePathError
from hermes_env.backends.bwrap import BwrapBackend
from hermes_env.backends.paths import workspace_relative
from hypothesis import given, settings
from hypothesis import strategies as st
from procs import unique_sleep, wait_no_process_with_cmdline


@pytest.mark.parametrize("path", ["../outside.txt", "a/../../outside.txt", "../../../../etc/passwd"])
async def test_dotdot_is_refused(backend: ExecutionBackend, path: str) -> None:
    with pytest.raises(PermissionError):
        await backend.read_file("t", path)
    with pytest.raises(PermissionError):
        await backend.write_file("t", path, b"x")


async def test_absolute_paths_are_workspace_rooted(backend: ExecutionBackend, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("host secret")
    # Reading a host absolute path reads <workspace>/<that path> instead, which does not exist.
    with pytest.raises(FileNotFoundError):
        await backend.read_file("t", str(outside))
    await backend.write_file("t", str(outside), b"redirected")
    assert outside.read_text() == "host secret"
    assert await backend.read_file("t", str(outside).lstrip("/")) == b"redirected"


async def test_symlinks_pointing_out_are_refused(backend: ExecutionBackend, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("host secret")
    ws = backend.workspace_path("t")  # type: ignore[attr-defined]
    await backend.start("t")
    os.symlink(outside / "secret.txt", ws / "file_link")
    os.symlink(outside, ws / "dir_link")
    os.symlink("../../", ws / "relative_link")
    for path in ("file_link", "dir_link/secret.txt", "relative_link/outside/secret.txt"):
        with pytest.raises(PermissionError):
            await backend.read_file("t", path)
    with pytest.raises(PermissionError):
        await backend.write_file("t", "dir_link/new.txt", b"x")
    with pytest.raises(PermissionError):
        await backend.write_file("t", "file_link", b"overwrite")
    assert not (outside / "new.txt").exists()
    assert (outside / "secret.txt").read_text() == "host secret"
    with pytest.raises(PermissionError):
        await backend.list_files("t", "dir_link")
    # Symlinks are not listed (nor followed) by list_files.
    assert await backend.list_files("t") == []


async def test_symlink_inside_workspace_is_fine(backend: ExecutionBackend) -> None:
    await backend.write_file("t", "real/data.txt", b"ok")
    ws = backend.workspace_path("t")  # type: ignore[attr-defined]
    os.symlink("real", ws / "alias")
    assert await backend.read_file("t", "alias/data.txt") == b"ok"


def test_workspace_relative_normalisation() -> None:
    assert str(workspace_relative("/workspace/a/b", ("/workspace",))) == "a/b"
    assert str(workspace_relative("/workspace", ("/workspace",))) == "."
    assert str(workspace_relative("/workspacefoo/x", ("/workspace",))) == "workspacefoo/x"
    assert str(workspace_relative("./a/./b/../c")) == "a/c"
    with pytest.raises(WorkspacePathError):
        workspace_relative("a/../../b")
    with pytest.raises(WorkspacePathError):
        workspace_relative("a\x00b")


async def test_bwrap_commands_cannot_see_host_files(bwrap: BwrapBackend, tmp_path: Path) -> None:
    secret = tmp_path / "host_secret.txt"
    secret.write_text("host secret")
    res = await bwrap.execute("t", f"cat {secret}; ls /root /home /work 2>&1; cat ../*/* 2>&1", 10)
    assert "host secret" not in res.output
    res = await bwrap.execute("t", "touch /usr/evil 2>&1; echo x > /etc/passwd 2>&1; echo rc=$?", 10)
    assert not Path("/usr/evil").exists()
    assert "rc=0" not in res.output


async def test_bwrap_cannot_read_another_tasks_workspace(bwrap: BwrapBackend) -> None:
    await bwrap.write_file("a", "secret.txt", b"task a secret")
    other = bwrap.workspace_path("a")
    res = await bwrap.execute(
        "b", f"cat {other}/secret.txt; cat /workspace/../*/secret.txt; find / -name secret.txt", 20
    )
    assert "task a secret" not in res.output


async def test_bwrap_network_is_off(bwrap: BwrapBackend) -> None:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.setblocking(False)
    port = server.getsockname()[1]
    try:
        probe = (
            "import socket,sys\n"
            "s=socket.socket(); s.settimeout(3)\n"
            f"try:\n    s.connect(('127.0.0.1', {port}))\nexcept OSError as e:\n    print('refused', e); sys.exit(3)\n"
            "print('connected')\n"
        )
        await bwrap.write_file("t", "probe.py", probe.encode())
        res = await bwrap.execute("t", "python3 probe.py", 20)
        assert res.exit_code == 3 and "refused" in res.output, res
        with pytest.raises(BlockingIOError):
            server.accept()  # nothing ever reached the host's listener
    finally:
        server.close()


async def test_bwrap_network_can_be_allowed(ws_root: Path) -> None:
    from hermes_env.backends.bwrap import bwrap_problem

    if bwrap_problem() is not None:
        pytest.skip("bubblewrap unusable here")
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    b = BwrapBackend(ws_root, allow_network=True)
    try:
        res = await b.execute(
            "t", f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 5)\"", 20
        )
        assert res.ok, res
    finally:
        server.close()
        await b.aclose()


async def test_bwrap_pid_namespace_hides_host_processes(bwrap: BwrapBackend) -> None:
    res = await bwrap.execute("t", "ls /proc | grep -c '^[0-9]'", 10)
    assert res.ok and int(res.output) < 10  # only the sandbox's own few processes


async def test_bwrap_fork_bomb_is_contained(bwrap: BwrapBackend) -> None:
    # max_processes=64: forking sleepers must hit the limit well before 500, and the host keeps working.
    bomb = (
        "import os, time\n"
        "n = 0\n"
        "try:\n"
        "    while n < 500:\n"
        "        if os.fork() == 0:\n"
        "            time.sleep(60)\n"
        "            os._exit(0)\n"
        "        n += 1\n"
        "except OSError as e:\n"
        "    print('limited after', n, 'forks:', e.strerror)\n"
    )
    await bwrap.write_file("t", "bomb.py", bomb.encode())
    res = await bwrap.execute("t", "python3 bomb.py", 30)
    assert "limited after" in res.output, res
    forks = int(res.output.split("limited after")[1].split()[0])
    assert forks < 64
    # The sleepers died with the sandbox's PID namespace, and other tasks still run.
    res = await bwrap.execute("t2", "echo alive", 10)
    assert res.ok and res.output == "alive\n"


async def test_bwrap_memory_and_file_size_limits(ws_root: Path) -> None:
    from hermes_env.backends.bwrap import bwrap_problem

    if bwrap_problem() is not None:
        pytest.skip("bubblewrap unusable here")
    b = BwrapBackend(ws_root, memory_bytes=256 * 1024**2, max_file_bytes_written=1024 * 1024)
    try:
        res = await b.execute("t", "python3 -c 'x = bytearray(1024**3)'", 20)
        assert not res.ok and "MemoryError" in res.output
        res = await b.execute("t", "head -c 5000000 /dev/zero > big.bin", 20)
        assert not res.ok
        assert (b.workspace_path("t") / "big.bin").stat().st_size <= 1024 * 1024
    finally:
        await b.aclose()


async def test_bwrap_sees_workspace_at_fixed_path(bwrap: BwrapBackend) -> None:
    res = await bwrap.execute("t", "pwd; echo $HOME; touch /tmp/x && echo tmp-ok", 10)
    assert res.output.split() == ["/workspace", "/workspace", "tmp-ok"]
    # /tmp is private to each call
    res = await bwrap.execute("t", "ls /tmp", 10)
    assert res.output == ""


async def test_bwrap_files_written_by_host_are_editable_inside(bwrap: BwrapBackend) -> None:
    await bwrap.write_file("t", "deep/dir/f.txt", b"v1\n")
    res = await bwrap.execute("t", "echo v2 >> deep/dir/f.txt && mkdir deep/dir/sub && cat deep/dir/f.txt", 10)
    assert res.ok and res.output == "v1\nv2\n"


async def test_bwrap_time_limit_kills_namespace(bwrap: BwrapBackend) -> None:
    # The backgrounded subshell is not waited for; only tearing down the PID namespace ends its sleep.
    orphan, waited = unique_sleep(), unique_sleep()
    res = await bwrap.execute("t", f"({orphan}; echo late) & {waited}", 1)
    assert res.timed_out and "late" not in res.output
    await wait_no_process_with_cmdline(orphan)
    await wait_no_process_with_cmdline(waited)


async def test_bwrap_root_unreachable_by_sandbox_uid_is_a_clear_error(tmp_path: Path) -> None:
    from hermes_env.backends.bwrap import bwrap_problem

    if bwrap_problem() is not None or os.geteuid() != 0:
        pytest.skip("needs usable bubblewrap and root (the sandbox uid differs only then)")
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    with pytest.raises(ValueError, match="not reachable by the sandbox uid"):
        BwrapBackend(private / "ws")


_SEGMENTS = st.sampled_from(["..", ".", "", "a", "b", "workspace", "/", "//", "etc", "x y", "..."])


@settings(max_examples=300, deadline=None)
@given(st.lists(_SEGMENTS, max_size=8), st.booleans())
def test_workspace_relative_never_leaves_the_root(parts: list[str], absolute: bool) -> None:
    raw = ("/" if absolute else "") + "/".join(parts)
    try:
        rel = workspace_relative(raw, ("/workspace",))
    except WorkspacePathError:
        return
    assert not rel.is_absolute()
    assert ".." not in rel.parts
    root = Path("/srv/ws")
    assert root in (root / rel).parents or (root / rel) == root
