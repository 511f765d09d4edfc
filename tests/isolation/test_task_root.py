"""bwrap: each task's own root directory, where absolute paths outside the system directories live.

A command's ``mkdir -p /tests /logs/verifier`` and the host side's ``write_file("/tests/x")`` /
``list_files("/logs/verifier")`` see the same per-task files (as in a container); another task sees
none of them, the system directories stay refused host side, and cleanup removes the root.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hermes_env.backends import get_backend
from hermes_env.backends.bwrap import BwrapBackend
from hermes_env.errors import WorkspacePathError
from hermes_env.isolation import bwrap_problem

from .conftest import LIMITS

pytestmark = pytest.mark.skipif(bwrap_problem() is not None, reason=f"bubblewrap unusable: {bwrap_problem()}")


@pytest.fixture
async def bwrap(ws_root: Path):  # type: ignore[no-untyped-def]
    backend = get_backend("bwrap", root=ws_root / "b", **LIMITS)
    try:
        yield backend
    finally:
        await backend.aclose()


async def test_task_root_holds_absolute_paths(bwrap: BwrapBackend) -> None:
    made = await bwrap.execute("a", "mkdir -p /tests /logs/verifier && echo 1 > /logs/verifier/reward.txt", 20)
    assert made.ok, made
    await bwrap.write_file("a", "/tests/sub/test.sh", b"echo ran > /logs/verifier/out.txt\n")
    ran = await bwrap.execute("a", "bash /tests/sub/test.sh && cat /logs/verifier/out.txt", 20)
    assert ran.output.strip() == "ran"
    assert await bwrap.list_files("a", "/logs/verifier") == ["/logs/verifier/out.txt", "/logs/verifier/reward.txt"]
    assert await bwrap.read_file("a", "/logs/verifier/reward.txt") == b"1\n"
    # Another task has a root of its own.
    other = await bwrap.execute("b", "ls /tests /logs 2>&1; echo end", 20)
    assert "No such file" in other.output and other.output.strip().endswith("end")
    with pytest.raises(FileNotFoundError):
        await bwrap.read_file("b", "/tests/sub/test.sh")
    # The workspace is not in the root: /workspace stays the workspace.
    await bwrap.write_file("a", "/workspace/w.txt", b"w")
    assert await bwrap.list_files("a") == ["w.txt"]


@pytest.mark.parametrize("path", ["/etc/passwd", "/usr/bin/env", "/tmp/x", "/proc/self/environ", "/", "/bin/sh"])
async def test_system_directories_stay_refused_host_side(bwrap: BwrapBackend, path: str) -> None:
    with pytest.raises(WorkspacePathError):
        await bwrap.read_file("a", path)
    with pytest.raises(WorkspacePathError):
        await bwrap.write_file("a", path, b"x")


async def test_nothing_outside_the_task_is_reachable_through_its_root(bwrap: BwrapBackend, ws_root: Path) -> None:
    # Symlinks the task plants in its root are not followed out of it by the host side.
    planted = await bwrap.execute("a", "mkdir -p /app && ln -s / /app/host && ln -s /workspace /ws && echo ok", 20)
    assert planted.output.strip() == "ok", planted
    secret = ws_root / "secret.txt"
    secret.write_text("host only")
    for path in (f"/app/host{secret}", "/app/host/etc/passwd", "/ws/../etc/passwd"):
        with pytest.raises((WorkspacePathError, FileNotFoundError)):
            await bwrap.read_file("a", path)
    with pytest.raises(WorkspacePathError):
        await bwrap.write_file("a", "/app/host/tmp/pwned", b"x")
    with pytest.raises(WorkspacePathError, match="climbs above"):
        await bwrap.read_file("a", "/../../etc/passwd")
    # In the sandbox, / is the task's root over the read-only system binds: the host's files are not there.
    seen = await bwrap.execute("a", f"cat {secret} 2>&1; touch /usr/pwned 2>&1; echo end", 20)
    assert "host only" not in seen.output and seen.output.strip().endswith("end")
    assert not Path("/usr/pwned").exists()


async def test_cleanup_removes_the_root(bwrap: BwrapBackend) -> None:
    await bwrap.write_file("a", "/tests/t.txt", b"x")
    root = bwrap.root_path("a")
    assert (root / "tests" / "t.txt").is_file()
    await bwrap.cleanup("a")
    assert not root.exists()
    # The same task id starts afresh: an empty root with the system links made again.
    again = await bwrap.execute("a", "ls /tests 2>&1; echo end", 20)
    assert "No such file" in again.output and again.output.strip().endswith("end"), again
