"""One worker's slots and the tools they run (the logic behind the sandbox server's routes).

A slot is a workspace, a user (its own uid when the worker runs as root) and, while leased, its
long-lived shells. Commands are sandboxed exactly as the ``bwrap`` backend sandboxes them
(``hermes_env.isolation``); each workspace is a tmpfs of ``disk_bytes`` where quotas work here.
"""

from __future__ import annotations

import asyncio
import base64
import errno
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from hermes_env.errors import FileTooLargeError, WorkspacePathError
from hermes_env.isolation import bubblewrap, paths, quota
from hermes_env.isolation.bubblewrap import HOST_ENV, SANDBOX_PATH, WORKSPACE_MOUNT, BwrapSpec
from hermes_env.isolation.process import run_sandboxed, sandboxed_argv
from hermes_env.isolation.result import ExecResult
from hermes_env.isolation.users import SLOT_UID_BASE, SandboxUser, kill_uids, task_user, user_process_count
from hermes_env.slot_pool.config import SandboxPolicy
from hermes_env.slot_pool.protocol import SANDBOX_TOOLS, SlotCall
from hermes_env.slot_pool.shells import StatefulShell, TmuxSession

log = logging.getLogger(__name__)


@dataclass
class Slot:
    index: int
    workspace: Path
    control_dir: Path
    user: SandboxUser
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    shell: StatefulShell | None = None
    tmux: TmuxSession | None = None
    calls_done: int = 0


# The errno of an exception raised with a message alone (``IsADirectoryError("'d' is a directory")``).
_ERRNO_OF = {
    FileNotFoundError: errno.ENOENT,
    NotADirectoryError: errno.ENOTDIR,
    IsADirectoryError: errno.EISDIR,
    PermissionError: errno.EACCES,
}


def _file_failure(exc: OSError, path: str) -> ExecResult:
    """The result a failed file operation returns (``errno`` in data lets the client raise the same exception)."""
    if isinstance(exc, WorkspacePathError):
        return ExecResult.failure("permission_denied", str(exc))
    if isinstance(exc, FileTooLargeError):
        return ExecResult.failure("too_large", str(exc))
    code = exc.errno if exc.errno is not None else _ERRNO_OF.get(type(exc))
    if isinstance(exc, FileNotFoundError | NotADirectoryError):
        return ExecResult.failure("not_found", f"{path!r} does not exist in the workspace", errno=code)
    if isinstance(exc, IsADirectoryError):
        return ExecResult.failure("bad_arguments", f"{path!r} is a directory", errno=code)
    if isinstance(exc, PermissionError):
        return ExecResult.failure("permission_denied", f"{path!r}: {exc.strerror or exc}", errno=code)
    return ExecResult.failure("bad_arguments", f"{path!r}: {exc.strerror or exc}", errno=code)


class SlotHost:
    """The slots of one worker: workspaces under ``root``, isolation per ``policy``."""

    def __init__(
        self,
        root: Path,
        n_slots: int,
        policy: SandboxPolicy,
        worker_index: int = 0,
        uid_base: int = SLOT_UID_BASE,
        isolation: Literal["bubblewrap", "container"] = "bubblewrap",
    ) -> None:
        self.root = root
        # "container": the worker's container isolates it (bubblewrap cannot mount /proc inside one); its slots are
        # separated by uid, private workspaces and rlimits, and commands run without a bubblewrap sandbox each.
        self.isolation = isolation
        self.policy = policy
        self.worker_index = worker_index
        self.slots = [
            Slot(
                index=i,
                workspace=root / "slots" / str(i),
                control_dir=root / "control" / str(i),
                user=task_user(uid_base, worker_index * n_slots + i),
            )
            for i in range(n_slots)
        ]
        self.sandboxed = True
        self.sandbox_problem: str | None = None
        self.quota_bytes: int | None = None
        self._nproc_offset = 0

    def prepare(self) -> None:
        """Create workspaces and check bubblewrap; raises when isolation is required but impossible."""
        self.root.mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o755)
        for sub in ("slots", "control"):
            (self.root / sub).mkdir(exist_ok=True)
            os.chmod(self.root / sub, 0o711)  # slots cannot list each other's directories
        first = self.slots[0].user if self.slots else SandboxUser()
        if self.isolation == "container":
            problem = None
            self.sandboxed = False
        else:
            problem = bubblewrap.probe(first, allow_network=self.policy.allow_network)
        if problem is not None:
            if self.policy.require_sandbox:
                raise RuntimeError(
                    f"{problem}. The policy requires a sandbox (require_sandbox=True); fix bubblewrap "
                    "or set require_sandbox=False to run tools unisolated"
                )
            log.warning("running tools WITHOUT isolation (require_sandbox=False): %s", problem)
            self.sandboxed = False
            self.sandbox_problem = problem
        # BackendUnavailableError now, rather than at the first call, when prlimit or setpriv is missing.
        self.policy.limits.prlimit_argv()
        first.argv_prefix()
        if self.policy.limits.disk_bytes is not None and self.isolation != "container":
            # In a container the worker has no mount rights; the container's own storage bounds its slots.
            problem = quota.quota_problem()
            if problem is None:
                self.quota_bytes = int(self.policy.limits.disk_bytes)
            else:
                log.warning("slot workspaces have no disk quota: %s; each file is still capped", problem)
        for slot in self.slots:
            self._fresh_workspace(slot)
        if self.slots and self.slots[0].user.uid is None:
            # Slots share the worker's uid: RLIMIT_NPROC counts all its processes, so leave room for them.
            self._nproc_offset = user_process_count()

    def _fresh_workspace(self, slot: Slot) -> None:
        if self.quota_bytes is not None:
            quota.unmount(slot.workspace)
            quota.mount_workspace(slot.workspace, self.quota_bytes, slot.user)
        else:
            paths.empty_dir(slot.workspace, slot.user.owner)

    # -- command lines ---------------------------------------------------------------------
    def spec(self, slot: Slot, binds: list[tuple[str, str]] | None = None) -> BwrapSpec | None:
        """How the slot's commands are sandboxed; None where they run unsandboxed (see ``sandboxed``)."""
        if not self.sandboxed:
            return None
        return BwrapSpec(
            str(slot.workspace),
            allow_network=self.policy.allow_network,
            ro_paths=self.policy.ro_paths,
            binds=tuple(binds or ()),
            env=self.policy.env,
            tmp_bytes=int(self.policy.limits.tmp_bytes),
        )

    def argv_for(self, slot: Slot, command: list[str], binds: list[tuple[str, str]] | None = None) -> list[str]:
        return sandboxed_argv(self.policy.limits, command, self.spec(slot, binds), nproc_offset=self._nproc_offset)

    def command_env(self, slot: Slot) -> dict[str, str]:
        """The environment of the process started: bwrap's own (it sets the sandbox's), or the command's."""
        if self.sandboxed:
            return dict(HOST_ENV)
        return {"PATH": SANDBOX_PATH, "HOME": str(slot.workspace), "LANG": "C.UTF-8", "TERM": "xterm"}

    def visible_roots(self, slot: Slot) -> tuple[str, ...]:
        return (WORKSPACE_MOUNT,) if self.sandboxed else (WORKSPACE_MOUNT, str(slot.workspace))

    def _builder(self, slot: Slot):  # noqa: ANN202 - a closure handed to the shells
        return lambda command, binds: self.argv_for(slot, command, binds)

    # -- tools -----------------------------------------------------------------------------
    def slot(self, index: int) -> Slot | None:
        return self.slots[index] if 0 <= index < len(self.slots) else None

    def _no_slot(self, index: int) -> ExecResult:
        return ExecResult.failure("internal", f"slot {index} does not exist (this worker has {len(self.slots)})")

    async def execute(self, call: SlotCall) -> ExecResult:
        slot = self.slot(call.slot)
        if slot is None:
            return self._no_slot(call.slot)
        async with slot.lock:
            try:
                result = await self._dispatch(slot, call)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a tool bug must fail one call, never the worker
                log.exception("tool %s failed on slot %d", call.tool, slot.index)
                result = ExecResult.failure("internal", f"{call.tool} failed inside the worker: {exc!r}")
            slot.calls_done += 1
            return result

    async def _dispatch(self, slot: Slot, call: SlotCall) -> ExecResult:
        args = call.args
        limits = self.policy.limits
        if call.tool == "bash":
            command = args.get("command")
            if not isinstance(command, str):
                return ExecResult.failure("bad_arguments", "bash needs 'command' (a string)")
            stdin = args.get("stdin")
            if stdin is not None and not isinstance(stdin, str):
                return ExecResult.failure("bad_arguments", "bash 'stdin' must be a string when given")
            return await run_sandboxed(
                ["/bin/bash", "-c", command],
                limits=limits,
                spec=self.spec(slot),
                cwd=str(slot.workspace),
                env=self.command_env(slot),
                timeout=call.timeout,
                stdin=stdin,
                user=slot.user,
                nproc_offset=self._nproc_offset,
            )
        if call.tool == "bash_stateful":
            command = args.get("command")
            if not isinstance(command, str):
                return ExecResult.failure("bad_arguments", "bash_stateful needs 'command' (a string)")
            if slot.shell is None:
                slot.shell = StatefulShell(self._builder(slot), slot.user, str(slot.workspace), self.command_env(slot))
            return await slot.shell.run(command, call.timeout, int(limits.max_output_bytes))
        if call.tool == "tmux":
            if slot.tmux is None:
                slot.tmux = TmuxSession(
                    self._builder(slot), slot.user, str(slot.workspace), self.command_env(slot), slot.control_dir
                )
            return await asyncio.wait_for(slot.tmux.run(args, int(limits.max_output_bytes)), call.timeout + 10)
        if call.tool == "read_file":
            return await self._file_op(slot, "read", args)
        if call.tool == "write_file":
            return await self._file_op(slot, "write", args)
        return ExecResult.failure(
            "unknown_tool", f"unknown sandbox tool {call.tool!r}; available: {', '.join(SANDBOX_TOOLS)}"
        )

    async def _file_op(self, slot: Slot, op: str, args: dict[str, Any]) -> ExecResult:
        path = args.get("path")
        if not isinstance(path, str):
            return ExecResult.failure("bad_arguments", f"{op}_file needs 'path' (a string)")
        limits = self.policy.limits
        roots = self.visible_roots(slot)
        try:
            if op == "read":
                data = await asyncio.to_thread(
                    paths.read_bytes, slot.workspace, path, roots, int(limits.max_read_bytes)
                )
                return ExecResult(
                    output=data.decode("utf-8", "replace"), data={"content_b64": base64.b64encode(data).decode()}
                )
            if "content_b64" in args:
                payload = base64.b64decode(str(args["content_b64"]), validate=True)
            elif isinstance(args.get("content"), str):
                payload = args["content"].encode()
            else:
                return ExecResult.failure(
                    "bad_arguments", "write_file needs 'content' (text) or 'content_b64' (base64 bytes)"
                )
            await asyncio.to_thread(
                paths.write_bytes, slot.workspace, path, payload, roots, slot.user.owner, int(limits.max_file_bytes)
            )
            return ExecResult(output=f"wrote {len(payload)} bytes to {path}")
        except OSError as exc:
            return _file_failure(exc, path)
        except ValueError as exc:
            return ExecResult.failure("bad_arguments", f"content_b64 is not valid base64: {exc}")

    # -- artifacts -------------------------------------------------------------------------
    async def artifact(self, index: int, kind: str, path: str, max_bytes: int | None) -> ExecResult:
        slot = self.slot(index)
        if slot is None:
            return self._no_slot(index)
        limit = min(max_bytes or self.policy.limits.max_read_bytes, self.policy.limits.max_read_bytes)
        roots = self.visible_roots(slot)
        try:
            if kind == "read":
                return await self._file_op(slot, "read", {"path": path})
            if kind == "list":
                files = await asyncio.to_thread(paths.list_files, slot.workspace, path, roots)
                return ExecResult(output="\n".join(files), data={"files": files})
            blob = await asyncio.to_thread(paths.archive, slot.workspace, path, roots, int(limit))
            return ExecResult(
                output=f"{len(blob)} bytes (tar.gz)", data={"archive_b64": base64.b64encode(blob).decode()}
            )
        except OSError as exc:
            return _file_failure(exc, path)

    # -- lifecycle -------------------------------------------------------------------------
    async def reset(self, index: int) -> ExecResult:
        slot = self.slot(index)
        if slot is None:
            return self._no_slot(index)
        async with slot.lock:
            await self._stop_slot_processes(slot)
            await asyncio.to_thread(self._fresh_workspace, slot)
        return ExecResult(output=f"slot {index} reset")

    async def _stop_slot_processes(self, slot: Slot) -> None:
        for session in (slot.shell, slot.tmux):
            if session is not None:
                await session.close()
        slot.shell = None
        slot.tmux = None
        if slot.user.uid is not None:
            # Anything the slot's user left running (nohup, setsid ...).
            await asyncio.to_thread(kill_uids, [slot.user.uid])

    async def close(self) -> None:
        for slot in self.slots:
            try:
                await self._stop_slot_processes(slot)
            except Exception:  # closing the others matters more
                log.exception("could not stop the processes of slot %d", slot.index)

    def describe(self) -> list[dict[str, Any]]:
        return [
            {
                "slot": s.index,
                "workspace": str(s.workspace),
                "uid": s.user.uid,
                "busy": s.lock.locked(),
                "calls_done": s.calls_done,
                "stateful_shell": bool(s.shell and s.shell.alive),
                "tmux": bool(s.tmux and s.tmux.alive),
            }
            for s in self.slots
        ]
