"""Per-workspace disk quotas: a workspace cannot grow past ``disk_bytes``, whoever writes (command or write_file)."""

from __future__ import annotations

import pytest
from hermes_env.backends import ExecutionBackend
from hermes_env.errors import FileTooLargeError
from hermes_env.isolation.quota import quota_problem

from .conftest import MakeBackend

pytestmark = pytest.mark.skipif(quota_problem() is not None, reason=f"no workspace quotas here: {quota_problem()}")
QUOTA = 48 * 1024 * 1024


@pytest.fixture
def small(make_sandboxed: MakeBackend) -> ExecutionBackend:
    return make_sandboxed(disk_bytes=QUOTA)


async def test_many_files_cannot_fill_more_than_the_quota(small: ExecutionBackend) -> None:
    # Each file is under the per-file limit (RLIMIT_FSIZE); together they are not.
    fill = "for i in 1 2 3 4; do head -c 20000000 /dev/zero > f$i.bin; echo f$i=$?; done; du -sb /workspace"
    r = await small.execute("q", fill, 60)
    statuses = dict(line.split("=") for line in r.output.split() if line.startswith("f"))
    assert statuses["f1"] == statuses["f2"] == "0" and statuses["f3"] == statuses["f4"] == "1", r.output
    assert "No space left on device" in r.output
    used = int(r.output.split()[-2])
    assert used <= QUOTA
    # Host-side writes count against the same quota.
    with pytest.raises(FileTooLargeError, match="workspace is full"):
        await small.write_file("q", "more.bin", b"x" * (12 * 1024 * 1024))
    # Deleting frees the space again.
    assert (await small.execute("q", "rm f1.bin f2.bin f3.bin", 20)).ok
    await small.write_file("q", "more.bin", b"x" * (12 * 1024 * 1024))


async def test_many_small_files_are_capped_too(small: ExecutionBackend) -> None:
    # One inode per 4 KiB of quota: a file-count flood stops there instead of eating kernel memory.
    r = await small.execute("n", "for i in $(seq 1 20000); do : > $i || { echo stopped at $i; break; }; done", 120)
    assert "stopped at" in r.output
    assert int(r.output.split()[-1]) <= QUOTA // 4096


async def test_a_fresh_workspace_has_the_whole_quota_again(small: ExecutionBackend) -> None:
    r = await small.execute("r", "head -c 60000000 /dev/zero > big; echo $?", 60)
    assert r.output.strip().endswith("1")
    await small.cleanup("r")
    r = await small.execute("r", "ls; df -B1 --output=size,used /workspace | tail -1", 20)
    size, used = map(int, r.output.split())
    assert size == QUOTA and used < 1024 * 1024
