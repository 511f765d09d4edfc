"""Stopping commands leaves nothing behind: not when a sandbox is killed while it starts, not when the run dies."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
from hermes_env.backends import get_backend
from hermes_env.backends.bwrap import BwrapBackend
from hermes_env.isolation import bwrap_problem
from hermes_env.isolation.process import run_limited, stop_tree

from tests.support.procs import kill_processes_with_cmdline, unique_sleep, wait_no_process_with_cmdline

needs_bwrap = pytest.mark.skipif(bwrap_problem() is not None, reason=f"bubblewrap unusable here: {bwrap_problem()}")
REPO = Path(__file__).resolve().parents[2]


def _descendants(pid: int) -> set[int]:
    table: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_bytes().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != b"Z":
                table[int(entry)] = int(fields[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, parent in table.items() if parent in frontier} - found
        found |= frontier
    return found


async def test_stop_tree_kills_descendants_that_left_the_process_group(tmp_path: Path) -> None:
    # setsid puts the grandchildren in sessions of their own: killing the process group misses them.
    marker = unique_sleep()
    proc = await asyncio.create_subprocess_exec(
        "/bin/sh", "-c", f"setsid {marker} & setsid sh -c '{marker}' & wait", start_new_session=True
    )
    for _ in range(100):
        if len(_descendants(proc.pid)) >= 3:
            break
        await asyncio.sleep(0.05)
    await stop_tree(proc.pid)
    await proc.wait()
    await wait_no_process_with_cmdline(marker)


@needs_bwrap
async def test_a_sandbox_killed_while_it_starts_does_not_survive(ws_root: Path) -> None:
    # bwrap's first process in the sandbox asks to die with its parent only after setting up its mounts;
    # stopping a command in that window used to leave the sandbox running under init (a few % of stops).
    backend = get_backend("bwrap", root=ws_root)
    assert isinstance(backend, BwrapBackend)
    await backend.start("t")
    markers = []
    try:
        for i in range(60):
            marker = unique_sleep()
            markers.append(marker)
            r = await run_limited(
                backend.build_argv("t", marker),
                cwd=str(backend.workspace_path("t")),
                env={"PATH": "/usr/bin:/bin"},
                timeout=0.001 + (i % 20) * 0.002,
                max_output_bytes=1024,
                kill_output_bytes=4096,
                user=backend.user("t"),
            )
            assert r.timed_out
        for marker in markers:
            await wait_no_process_with_cmdline(marker)
    finally:
        await backend.aclose()


@needs_bwrap
async def test_cleanup_right_after_the_start_leaves_no_sandbox(ws_root: Path) -> None:
    backend = get_backend("bwrap", root=ws_root)
    markers = []
    try:
        for i in range(20):
            marker = unique_sleep()
            markers.append(marker)
            task = asyncio.create_task(backend.execute(f"c{i}", marker, 60))
            await asyncio.sleep((i % 10) * 0.003)
            await backend.cleanup(f"c{i}")
            assert not (await task).ok
        for marker in markers:
            await wait_no_process_with_cmdline(marker)
    finally:
        await backend.aclose()


_DYING_RUN = """
import asyncio, sys
from hermes_env.backends import get_backend

async def main():
    options = {"slots_per_worker": 2, "max_workers": 1} if sys.argv[1] == "sandbox" else {}
    backend = get_backend(sys.argv[1], **options)
    await backend.write_file("t", "f.txt", b"data")
    asyncio.ensure_future(backend.execute("t", sys.argv[2], 300))
    await asyncio.sleep(1.0)
    root = backend.root if hasattr(backend, "root") else backend.pool._root
    print(root, flush=True)
    await asyncio.sleep(300)

asyncio.run(main())
"""


@pytest.mark.parametrize(
    "name", ["local", pytest.param("bwrap", marks=needs_bwrap), pytest.param("sandbox", marks=needs_bwrap)]
)
async def test_a_killed_run_leaves_no_process_and_its_root_goes_at_the_next_start(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = unique_sleep()
    # A temp dir of this test's own: other runs on the host sweep dead roots in /tmp too, and would take ours.
    tmp = Path(tempfile.mkdtemp(prefix="hermes-test-tmp-"))
    tmp.chmod(0o711)  # the task users must reach the workspaces under it
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    env = {**os.environ, "PYTHONPATH": str(REPO / "python"), "TMPDIR": str(tmp)}
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(_DYING_RUN), name, marker], stdout=subprocess.PIPE, env=env, text=True
    )
    try:
        assert proc.stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(proc.stdout.readline), 120)
        root = Path(line.strip())
        assert root.is_dir() and root.parent == tmp, line
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if name != "local":  # local commands are not sandboxed and, like any child, may outlive a SIGKILLed parent
            await wait_no_process_with_cmdline(marker)
            await wait_no_process_with_cmdline(str(root))  # sandbox workers exit with the run
        assert root.is_dir()  # nobody could remove it ...
        nxt = get_backend("local")  # ... until the next run starts
        try:
            assert not root.exists()
        finally:
            await nxt.aclose()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        kill_processes_with_cmdline(marker)
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.mark.parametrize("stdin", [None, "input"])
async def test_a_call_cancelled_while_it_starts_leaves_no_descriptor_and_no_process(
    tmp_path: Path, stdin: str | None
) -> None:
    # A dropped group cancels its rollouts' commands wherever they are, spawn included: each
    # step of the start is hit by giving the call more and more event-loop turns before the cancel.
    marker = unique_sleep()
    await asyncio.sleep(0)
    before = {fd for fd in os.listdir("/proc/self/fd")}
    for turns in range(12):
        call = asyncio.ensure_future(
            run_limited(
                ["/bin/sh", "-c", marker],
                cwd=str(tmp_path),
                env={"PATH": os.environ["PATH"]},
                timeout=30,
                max_output_bytes=1000,
                kill_output_bytes=10_000,
                stdin=stdin,
            )
        )
        for _ in range(turns):
            await asyncio.sleep(0)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
    await wait_no_process_with_cmdline(marker)
    for _ in range(50):  # asyncio closes a finished process's transport a few loop turns later
        leaked = {fd for fd in os.listdir("/proc/self/fd")} - before
        if not {fd for fd in leaked if os.path.exists(f"/proc/self/fd/{fd}")}:
            break
        await asyncio.sleep(0.02)
    assert not {
        f"{fd} -> {os.readlink(f'/proc/self/fd/{fd}')}" for fd in leaked if os.path.exists(f"/proc/self/fd/{fd}")
    }
