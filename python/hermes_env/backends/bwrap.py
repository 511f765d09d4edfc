"""``bwrap`` backend: every command runs in a fresh bubblewrap sandbox over the task's workspace.

The sandbox (``hermes_env.isolation.bubblewrap``): read-only system directories, the workspace
read-write at ``/workspace``, private ``/tmp``, new namespaces, no network unless
``allow_network``; every process of a command under the ``ResourceLimits`` rlimits.

As root, each task runs as a uid of its own (``hermes_env.isolation.users``): its workspace is
mode 0700 and owned by it, its process limit is its own, and cleanup kills every process of
that uid. Each workspace is then also a tmpfs of ``disk_bytes`` (the disk quota). As an ordinary
user, tasks run as that user and workspaces are plain directories (each file still capped by
``max_file_bytes``).

Ending a command (timeout, cleanup) freezes and kills its whole tree, the sandbox's PID
namespace included; bwrap's ``--die-with-parent`` covers this process dying.

Absolute paths: each task also has a root directory of its own (``<workspace>.root`` beside the workspace,
created and destroyed with it, the same owner and quota), bound at ``/`` beneath the system mounts. So
``mkdir -p /tests /logs/verifier`` in a command, ``ToolContext.upload_dir(..., "/tests")`` and
``download_dir("/logs/verifier", ...)`` see the same per-task files, as they would in a container, while
nothing of the host or of another task is reachable: the system directories stay read-only binds (or
private per command: ``/tmp``, ``/run``), and host-side file methods refuse paths under them.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections import deque
from pathlib import Path
from typing import Any

from hermes_env.backends.host_workspace import HostWorkspaceBackend
from hermes_env.backends.options import BwrapOptions
from hermes_env.errors import BackendUnavailableError, WorkspacePathError
from hermes_env.isolation import paths, quota, reaper
from hermes_env.isolation.bubblewrap import (
    HOST_ENV,
    SYSTEM_TOP_LEVEL,
    WORKSPACE_MOUNT,
    BwrapSpec,
    bwrap_problem,
    check_mount_point,
    make_root_links,
)
from hermes_env.isolation.process import run_sandboxed, sandboxed_argv
from hermes_env.isolation.result import ExecResult
from hermes_env.isolation.users import UID_BLOCK, SandboxUser, UidBlock, kill_uids, user_process_count

log = logging.getLogger(__name__)


def _first_untraversable(path: Path, uid: int, gid: int) -> Path | None:
    """The first directory on ``path`` (ancestors included) that ``uid`` cannot search."""
    for candidate in [*reversed(path.parents), path]:
        st = candidate.stat()
        if st.st_uid == uid:
            bit = 0o100
        elif st.st_gid == gid:
            bit = 0o010
        else:
            bit = 0o001
        if not st.st_mode & bit:
            return candidate
    return None


class BwrapBackend(HostWorkspaceBackend):
    name = "bwrap"
    options_model = BwrapOptions
    limit_options = BwrapOptions.limit_names

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        *,
        allow_network: bool = False,
        workspace_mount: str = WORKSPACE_MOUNT,
        ro_paths: tuple[str, ...] | list[str] = (),
        extra_ro_binds: dict[str, str] | None = None,
        env: dict[str, str] | None = None,
        **limit_options: Any,
    ) -> None:
        problem = bwrap_problem()
        if problem is not None:
            raise BackendUnavailableError(f"bwrap backend unavailable: {problem}")
        reaper.start()  # orphaned sandbox processes come to this process and are reaped here
        self.workspace_mount = check_mount_point(workspace_mount)
        super().__init__(root, **limit_options)
        self.limits.prlimit_argv()  # BackendUnavailableError now rather than at the first call
        self.allow_network = allow_network
        self.ro_paths = tuple(ro_paths)
        self.extra_ro_binds = tuple(dict(extra_ro_binds or {}).items())
        self.extra_env = tuple(dict(env or {}).items())
        self._uids = UidBlock()
        self._uids.user(0).argv_prefix()  # BackendUnavailableError now if setpriv is missing
        self._users: dict[str, SandboxUser] = {}
        self._free_slots: deque[int] = deque()
        self._next_slot = 0
        self._shell = "/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh"
        # Tasks sharing our uid share its process count: leave room for what already runs.
        self._nproc_offset = 0 if self._uids.distinct else user_process_count()
        self._quota: int | None = None
        if self.limits.disk_bytes is not None:
            problem = quota.quota_problem()
            if problem is None:
                self._quota = int(self.limits.disk_bytes)
            else:
                log.warning("workspaces have no disk quota: %s; each file is still capped by max_file_bytes", problem)
        if self._uids.distinct:
            self.root.chmod(0o711)  # task users must traverse the root to reach their workspaces
            probe = self._uids.user(0)
            blocked = _first_untraversable(self.root, probe.uid or 0, probe.gid or 0)
            if blocked is not None:
                self._uids.release()
                raise ValueError(
                    f"bwrap root {str(self.root)!r} is not reachable by the sandbox's task users: "
                    f"{str(blocked)!r} has no search permission for them (mode {blocked.stat().st_mode & 0o777:o}); "
                    "use a root under a world-traversable directory such as /tmp, or chmod o+x that directory"
                )

    def visible_roots(self, task_id: str) -> tuple[str, ...]:
        return (self.workspace_mount,)

    # -- the task's own root directory (absolute paths outside the workspace) ---------------------------------
    def root_path(self, task_id: str) -> Path:
        """Host path of the directory the task's commands see as ``/`` (beneath the system mounts)."""
        ws = self.workspace_path(task_id)
        return ws.with_name(ws.name + ".root")

    def _create(self, ws: Path, user: SandboxUser) -> None:
        super()._create(ws, user)
        root = ws.with_name(ws.name + ".root")
        size = self._quota_bytes()
        if size is not None:
            quota.mount_workspace(root, size, user)
        else:
            root.mkdir(parents=True, exist_ok=True)
            paths.empty_dir(root, user.owner, mode=0o700 if user.owner else 0o755)
        make_root_links(root)

    def _destroy(self, task_id: str, ws: Path) -> None:
        super()._destroy(task_id, ws)
        root = ws.with_name(ws.name + ".root")
        quota.unmount(root)
        paths.force_rmtree(root)

    def _outside_workspace(self, path: str) -> str | None:
        """For an absolute path outside the workspace mount: the path relative to the task's root; else None.

        WorkspacePathError for a path under a system directory, which the host side cannot reach as the
        sandbox sees it (read-only host binds, or ``/tmp`` and ``/run``, private to each command).
        """
        if not isinstance(path, str) or not path.startswith("/"):
            return None
        mount = self.workspace_mount
        if path == mount or path.startswith(mount + "/"):
            return None
        rel = paths.root_relative(path)
        top = rel.parts[0] if rel.parts else ""
        if not top or top in SYSTEM_TOP_LEVEL:
            raise WorkspacePathError(
                f"path {path!r} is {'the root' if not top else 'under /' + top}: the sandbox's system directories "
                f"are read-only host binds (/tmp and /run private to each command); use {mount} or an absolute "
                "directory of the task's own such as /tests or /app"
            )
        return str(rel)

    async def read_file(self, task_id: str, path: str) -> bytes:
        rel = self._outside_workspace(path)
        if rel is None:
            return await super().read_file(task_id, path)
        await self.start(task_id)
        return await asyncio.to_thread(
            paths.read_bytes, self.root_path(task_id), rel, (), int(self.limits.max_read_bytes)
        )

    async def write_file(self, task_id: str, path: str, data: bytes) -> None:
        rel = self._outside_workspace(path)
        if rel is None:
            return await super().write_file(task_id, path, data)
        if not isinstance(data, bytes | bytearray | memoryview):
            raise TypeError(f"data must be bytes, got {type(data).__name__}")
        await self.start(task_id)
        await asyncio.to_thread(
            paths.write_bytes,
            self.root_path(task_id),
            rel,
            bytes(data),
            (),
            self.user(task_id).owner,
            int(self.limits.max_file_bytes),
        )

    async def list_files(self, task_id: str, path: str = ".") -> list[str]:
        """Workspace-relative paths, or absolute ones for a path outside the workspace (``/logs/verifier``)."""
        rel = self._outside_workspace(path)
        if rel is None:
            return await super().list_files(task_id, path)
        await self.start(task_id)
        found = await asyncio.to_thread(paths.list_files, self.root_path(task_id), rel, ())
        return ["/" + name for name in found]

    def user(self, task_id: str) -> SandboxUser:
        user = self._users.get(task_id)
        if user is None:
            # Unused uids first, then the longest-freed one: what _release_user killed stays a zombie until the
            # host's init reaps it, counted against the uid's RLIMIT_NPROC ("Can't fork for pid 1" for a task
            # handed that uid straight back). Claiming the block killed any earlier holder's leftovers.
            if self._next_slot < UID_BLOCK:
                slot, self._next_slot = self._next_slot, self._next_slot + 1
            elif self._free_slots:
                slot = self._free_slots.popleft()
            else:
                raise BackendUnavailableError(
                    f"more than {UID_BLOCK} bwrap tasks at once; clean up finished tasks (ToolContext.cleanup)"
                )
            user = self._users[task_id] = self._uids.user(slot)
        return user

    def _release_user(self, task_id: str) -> None:
        user = self._users.pop(task_id, None)
        if user is None:
            return
        if user.uid is not None:
            kill_uids([user.uid])  # whatever escaped the command's sandbox
            self._free_slots.append(user.uid - self._uids.base)

    def _quota_bytes(self) -> int | None:
        return self._quota

    def spec(self, task_id: str) -> BwrapSpec:
        """How the task's commands are sandboxed."""
        return BwrapSpec(
            str(self.workspace_path(task_id)),
            mount_point=self.workspace_mount,
            allow_network=self.allow_network,
            ro_paths=self.ro_paths,
            ro_binds=self.extra_ro_binds,
            env=self.extra_env,
            tmp_bytes=int(self.limits.tmp_bytes),
            root=str(self.root_path(task_id)),
        )

    def build_argv(self, task_id: str, command: str) -> list[str]:
        """The full command line for one sandboxed command (public for inspection and tests)."""
        argv = [self._shell, "-c", command]
        return sandboxed_argv(self.limits, argv, self.spec(task_id), nproc_offset=self._nproc_offset)

    async def execute(self, task_id: str, command: str, timeout: float, *, stdin: str | None = None) -> ExecResult:
        await self.start(task_id)
        result = await run_sandboxed(
            [self._shell, "-c", command],
            limits=self.limits,
            spec=self.spec(task_id),
            cwd=str(self.workspace_path(task_id)),
            env=HOST_ENV,
            timeout=timeout,
            stdin=stdin,
            user=self.user(task_id),
            nproc_offset=self._nproc_offset,
            running=self.running_set(task_id),
        )
        if result.exit_code != 0 and result.output.startswith("bwrap:"):
            # bwrap itself failed (bad bind, namespace setup): a sandbox error, not the command's.
            message = result.output.strip()
            return ExecResult(
                output=result.output, exit_code=result.exit_code, error=message, error_type="sandbox_unavailable"
            )
        return result

    async def aclose(self) -> None:
        await super().aclose()
        self._uids.release()

    def describe(self) -> str:
        users = f"uids {self._uids.base}+" if self._uids.distinct else f"uid {os.geteuid()}"
        return (
            f"bwrap(workspace={self.workspace_mount}, network={'on' if self.allow_network else 'off'}, "
            f"cpu={self.limits.cpu_seconds}s, as={self.limits.memory_bytes}, nproc={self.limits.max_processes}, "
            f"disk={self._quota or 'no quota'}, {users})"
        )
