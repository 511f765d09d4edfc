"""One worker's slots and the tools they run (the logic behind the sandbox server's routes)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from hermes_env.sandbox import workspace as ws
from hermes_env.sandbox.config import SandboxPolicy
from hermes_env.sandbox.isolation import (
    SLOT_UID_BASE,
    SlotIdentity,
    bwrap_argv,
    limits_prefix,
    probe_bwrap,
    slot_identity,
    user_process_count,
)
from hermes_env.sandbox.protocol import SANDBOX_TOOLS, ToolCall, ToolResult
from hermes_env.sandbox.runner import run_process
from hermes_env.sandbox.shells import StatefulShell, TmuxSession

log = logging.getLogger(__name__)


@dataclass
class Slot:
    index: int
    workspace: Path
    control_dir: Path
    identity: SlotIdentity
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    shell: StatefulShell | None = None
    tmux: TmuxSession | None = None
    calls_done: int = 0


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
                identity=slot_identity(worker_index, i, n_slots, uid_base),
            )
            for i in range(n_slots)
        ]
        self.sandboxed = True
        self.sandbox_problem: str | None = None
        self._nproc_offset = 0

    def prepare(self) -> None:
        """Create workspaces and check bubblewrap; raises when isolation is required but impossible."""
        self.root.mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o755)
        for sub in ("slots", "control"):
            (self.root / sub).mkdir(exist_ok=True)
            os.chmod(self.root / sub, 0o711)  # slots cannot list each other's directories
        for slot in self.slots:
            ws.reset(slot.workspace, slot.identity)
            os.chmod(slot.workspace, 0o700)
        if self.isolation == "container":
            self.sandboxed = False
            problem = None
        else:
            problem = probe_bwrap(
                self.policy, self.root / "probe", self.slots[0].identity if self.slots else SlotIdentity(None, None)
            )
        if problem is not None:
            if self.policy.require_sandbox:
                raise RuntimeError(
                    f"{problem}. The policy requires a sandbox (require_sandbox=True); fix bubblewrap "
                    "or set require_sandbox=False to run tools unisolated"
                )
            log.warning("running tools WITHOUT isolation (require_sandbox=False): %s", problem)
            self.sandboxed = False
            self.sandbox_problem = problem
        if self.slots and self.slots[0].identity.uid is None:
            # Slots share the worker's uid: RLIMIT_NPROC counts all its processes, so leave room for them.
            self._nproc_offset = user_process_count()

    # -- command lines ---------------------------------------------------------------------
    def argv_for(self, slot: Slot, command: list[str], binds: list[tuple[str, str]] | None = None) -> list[str]:
        prefix = limits_prefix(self.policy.limits, nproc_offset=self._nproc_offset)
        if not self.sandboxed:
            return prefix + command
        return prefix + bwrap_argv(slot.workspace, command, self.policy, extra_binds=binds)

    def _builder(self, slot: Slot):  # noqa: ANN202 - a closure handed to the shells
        return lambda command, binds: self.argv_for(slot, command, binds)

    # -- tools -----------------------------------------------------------------------------
    def slot(self, index: int) -> Slot | None:
        return self.slots[index] if 0 <= index < len(self.slots) else None

    async def execute(self, call: ToolCall) -> ToolResult:
        slot = self.slot(call.slot)
        if slot is None:
            return ToolResult.failure(
                "bad_request", f"slot {call.slot} does not exist (this worker has {len(self.slots)})"
            )
        async with slot.lock:
            try:
                result = await self._dispatch(slot, call)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a tool bug must fail one call, never the worker
                log.exception("tool %s failed on slot %d", call.tool, slot.index)
                result = ToolResult.failure("internal", f"{call.tool} failed inside the worker: {exc!r}")
            slot.calls_done += 1
            return result

    async def _dispatch(self, slot: Slot, call: ToolCall) -> ToolResult:
        args = call.args
        limits = self.policy.limits
        if call.tool == "bash":
            command = args.get("command")
            if not isinstance(command, str):
                return ToolResult.failure("bad_request", "bash needs 'command' (a string)")
            stdin = args.get("stdin")
            if stdin is not None and not isinstance(stdin, str):
                return ToolResult.failure("bad_request", "bash 'stdin' must be a string when given")
            argv = self.argv_for(slot, ["/bin/bash", "-c", command])
            cwd = str(slot.workspace)
            return await run_process(
                argv,
                cwd=cwd,
                identity=slot.identity,
                timeout=call.timeout,
                max_output=limits.max_output_bytes,
                stdin=stdin.encode() if stdin is not None else None,
            )
        if call.tool == "bash_stateful":
            command = args.get("command")
            if not isinstance(command, str):
                return ToolResult.failure("bad_request", "bash_stateful needs 'command' (a string)")
            if slot.shell is None:
                slot.shell = StatefulShell(self._builder(slot), slot.identity, str(slot.workspace))
            return await slot.shell.run(command, call.timeout, limits.max_output_bytes)
        if call.tool == "tmux":
            if slot.tmux is None:
                slot.tmux = TmuxSession(self._builder(slot), slot.identity, str(slot.workspace), slot.control_dir)
            return await asyncio.wait_for(slot.tmux.run(args, limits.max_output_bytes), call.timeout + 10)
        if call.tool == "read_file":
            return await self._file_op(slot, "read", args)
        if call.tool == "write_file":
            return await self._file_op(slot, "write", args)
        return ToolResult.failure(
            "unknown_tool", f"unknown sandbox tool {call.tool!r}; available: {', '.join(SANDBOX_TOOLS)}"
        )

    async def _file_op(self, slot: Slot, op: str, args: dict[str, Any]) -> ToolResult:
        path = args.get("path")
        if not isinstance(path, str):
            return ToolResult.failure("bad_request", f"{op}_file needs 'path' (a string)")
        limits = self.policy.limits
        try:
            if op == "read":
                data = await asyncio.to_thread(ws.read_file, slot.workspace, path, limits.max_read_bytes)
                return ToolResult(
                    output=data.decode("utf-8", "replace"), data={"content_b64": base64.b64encode(data).decode()}
                )
            if "content_b64" in args:
                payload = base64.b64decode(str(args["content_b64"]), validate=True)
            elif isinstance(args.get("content"), str):
                payload = args["content"].encode()
            else:
                return ToolResult.failure(
                    "bad_request", "write_file needs 'content' (text) or 'content_b64' (base64 bytes)"
                )
            if len(payload) > limits.max_file_bytes:
                return ToolResult.failure(
                    "too_large", f"{len(payload)} bytes is over the {limits.max_file_bytes}-byte file limit"
                )
            await asyncio.to_thread(ws.write_file, slot.workspace, path, payload, slot.identity)
            return ToolResult(output=f"wrote {len(payload)} bytes to {path}")
        except ws.FileTooLargeError as exc:
            return ToolResult.failure("too_large", str(exc))
        except PermissionError as exc:
            return ToolResult.failure("permission_denied", str(exc))
        except (FileNotFoundError, NotADirectoryError):
            return ToolResult.failure("not_found", f"{path!r} does not exist in the workspace")
        except IsADirectoryError as exc:
            return ToolResult.failure("bad_request", str(exc))
        except ValueError as exc:
            return ToolResult.failure("bad_request", f"content_b64 is not valid base64: {exc}")

    # -- artifacts -------------------------------------------------------------------------
    async def artifact(self, index: int, kind: str, path: str, max_bytes: int | None) -> ToolResult:
        slot = self.slot(index)
        if slot is None:
            return ToolResult.failure("bad_request", f"slot {index} does not exist (this worker has {len(self.slots)})")
        limit = min(max_bytes or self.policy.limits.max_read_bytes, self.policy.limits.max_read_bytes)
        try:
            if kind == "read":
                return await self._file_op(slot, "read", {"path": path})
            if kind == "list":
                files = await asyncio.to_thread(ws.list_files, slot.workspace, path)
                return ToolResult(output="\n".join(files), data={"files": files})
            blob = await asyncio.to_thread(ws.archive, slot.workspace, path, limit)
            return ToolResult(
                output=f"{len(blob)} bytes (tar.gz)", data={"archive_b64": base64.b64encode(blob).decode()}
            )
        except ws.FileTooLargeError as exc:
            return ToolResult.failure("too_large", str(exc))
        except PermissionError as exc:
            return ToolResult.failure("permission_denied", str(exc))
        except FileNotFoundError as exc:
            return ToolResult.failure("not_found", str(exc))

    # -- lifecycle -------------------------------------------------------------------------
    async def reset(self, index: int) -> ToolResult:
        slot = self.slot(index)
        if slot is None:
            return ToolResult.failure("bad_request", f"slot {index} does not exist (this worker has {len(self.slots)})")
        async with slot.lock:
            await self._stop_slot_processes(slot)
            await asyncio.to_thread(ws.reset, slot.workspace, slot.identity)
            os.chmod(slot.workspace, 0o700)
        return ToolResult(output=f"slot {index} reset")

    async def _stop_slot_processes(self, slot: Slot) -> None:
        for session in (slot.shell, slot.tmux):
            if session is not None:
                await session.close()
        slot.shell = None
        slot.tmux = None
        if slot.identity.uid is not None:
            await asyncio.to_thread(
                kill_uid, slot.identity.uid
            )  # anything the slot's user left running (nohup, setsid ...)

    async def close(self) -> None:
        for slot in self.slots:
            with contextlib.suppress(Exception):
                await self._stop_slot_processes(slot)

    def describe(self) -> list[dict[str, Any]]:
        return [
            {
                "slot": s.index,
                "workspace": str(s.workspace),
                "uid": s.identity.uid,
                "busy": s.lock.locked(),
                "calls_done": s.calls_done,
                "stateful_shell": bool(s.shell and s.shell.alive),
                "tmux": bool(s.tmux and s.tmux.alive),
            }
            for s in self.slots
        ]


def _live_pids_of(uid: int) -> list[int]:
    pids = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if entry.stat().st_uid != uid:
                continue
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in (b"Z", b"X"):  # zombies hold no resources; their parent reaps them
            pids.append(int(entry.name))
    return pids


def kill_uid(uid: int, attempts: int = 50) -> int:
    """SIGKILL every live process whose uid is ``uid`` until none is left; returns how many were signalled."""
    killed = 0
    for _ in range(attempts):
        pids = _live_pids_of(uid)
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                killed += 1
        time.sleep(0.02)
    return killed
