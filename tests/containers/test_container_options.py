"""Per-task container settings of the docker backend (ContainerOptions), copy_in and disconnect_network."""

from __future__ import annotations

from pathlib import Path

from hermes_env.backends.docker import ContainerOptions, DockerBackend
from hermes_env.containers import BASE_IMAGE, ContainerEngine
from hermes_env.containers.images import ImageSpec


async def test_options_mounts_copy_in_and_network(engine: ContainerEngine, tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "tool").write_text("read me\n")
    incoming = tmp_path / "incoming"
    (incoming / "sub").mkdir(parents=True)
    (incoming / "sub" / "data.txt").write_text("copied\n")
    backend = DockerBackend(engine=engine.program, memory_bytes="256MiB", allow_network=False)
    options = ContainerOptions(
        memory_mib=300, allow_network=True, workspace="/srv/work", mounts=((str(shared), "/opt/shared"),),
        env=(("TASK_FLAG", "on"),),
    )  # fmt: skip
    backend.use_image("t", ImageSpec(image=BASE_IMAGE), options)
    try:
        assert backend.visible_roots("t") == ("/srv/work",)
        here = await backend.execute("t", "pwd; echo $TASK_FLAG; cat /opt/shared/tool", timeout=30)
        assert here.output.split("\n")[:3] == ["/srv/work", "on", "read me"]
        limit = await backend.execute("t", "cat /sys/fs/cgroup/memory.max 2>/dev/null || "
                                      "cat /sys/fs/cgroup/memory/memory.limit_in_bytes", timeout=30)  # fmt: skip
        assert int(limit.output.split()[0]) == 300 * 1024 * 1024
        denied = await backend.execute("t", "touch /opt/shared/planted", timeout=30)
        assert denied.exit_code != 0 and not (shared / "planted").exists()
        await backend.copy_in("t", incoming, "/harness/in")
        copied = await backend.execute("t", "cat /harness/in/sub/data.txt", timeout=30)
        assert copied.output.strip() == "copied"
        before = await backend.execute("t", "grep -c . /proc/net/route", timeout=30)
        assert int(before.output.split()[0]) > 1  # a default route: the task asked for network
        await backend.disconnect_network("t")
        after = await backend.execute("t", "grep -c . /proc/net/route", timeout=30)
        assert int(after.output.split()[0]) == 1  # the header line only
    finally:
        await backend.aclose()
