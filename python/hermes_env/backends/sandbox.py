"""``sandbox`` backend: the slot pool and executor (``hermes_env.slot_pool``) behind the ExecutionBackend seam.

Selected with ``terminal_backend: sandbox``; ``terminal_backend_options`` (:class:`SandboxOptions`) may hold
nested ``pool`` / ``policy`` / ``executor`` / ``limits`` sections or flat keys of any of them, e.g.
``{"slots_per_worker": 16, "max_workers": 8, "allow_network": false, "launcher": "ray"}``.
"""

from __future__ import annotations

import asyncio
import base64
import shlex
from typing import Any, ClassVar, Literal

import aiohttp
from pydantic import BaseModel, Field, model_validator

from hermes_env.backends.base import ExecutionBackend
from hermes_env.backends.options import DEPRECATED_NAMES, BackendOptions, merge_limits
from hermes_env.errors import BackendFailure, FileTooLargeError, WorkspacePathError
from hermes_env.isolation.limits import ResourceLimits
from hermes_env.isolation.result import ExecResult
from hermes_env.slot_pool.config import ExecutorConfig, PoolConfig, SandboxPolicy
from hermes_env.slot_pool.executor import ToolExecutor, decode_content
from hermes_env.slot_pool.pool import SlotPool
from hermes_env.slot_pool.protocol import SlotCall
from hermes_env.timeouts import CallBudget

# Regular files under a workspace path, workspace-relative, for callers on a foreign loop (see ``_direct``).
_LIST_FILES = "test -e {path} && find {path} -type f -printf '%p\\n' | sed 's|^\\./||'"


class SandboxOptions(BackendOptions):
    """``sandbox``: the slot pool. Each option lives in one section: ``pool`` (:class:`PoolConfig`: launcher,
    worker counts, Ray and container settings), ``policy`` (:class:`SandboxPolicy`: network, isolation, the
    resource ``limits``) and ``executor`` (:class:`ExecutorConfig`: batching, timeouts, the tool server).

    Flat keys, as hermes-agent's configs and ``AgentEnvConfig.pool_options`` write them, go to the section that
    owns the name; a ``limits`` section or a flat limit name goes to ``policy.limits``."""

    kind: Literal["sandbox"] = "sandbox"
    limit_names: ClassVar[frozenset[str]] = frozenset(ResourceLimits.option_names())

    pool: PoolConfig = Field(default_factory=PoolConfig)
    policy: SandboxPolicy = Field(default_factory=SandboxPolicy)
    executor: ExecutorConfig = Field(default_factory=ExecutorConfig)

    #: Section -> the names it owns (its fields, and the old names its model still accepts).
    SECTIONS: ClassVar[dict[str, frozenset[str]]] = {
        "pool": frozenset(PoolConfig.model_fields) | PoolConfig.RENAMED.keys(),
        "policy": frozenset(SandboxPolicy.model_fields),
        "executor": frozenset(ExecutorConfig.model_fields),
    }

    @model_validator(mode="before")
    @classmethod
    def _flat_limits(cls, data: Any) -> Any:
        # Replaces the base's: the sandbox's limits live in policy.limits.
        if not isinstance(data, dict):
            return data
        sections: dict[str, dict[str, Any]] = {name: {} for name in cls.SECTIONS}
        limits: dict[str, Any] = {}
        rest: dict[str, Any] = {}
        for key, value in data.items():
            if key in sections or key == "limits":
                if isinstance(value, BaseModel):
                    value = value.model_dump(exclude_unset=True)
                if not isinstance(value, dict):
                    raise ValueError(f"sandbox option {key!r} must be a mapping, got {type(value).__name__}")
                (limits if key == "limits" else sections[key]).update(value)
            elif key in cls.limit_names:
                limits[key] = value
            else:
                owner = next((name for name, names in cls.SECTIONS.items() if key in names), None)
                if owner is None:
                    rest[key] = value  # kind, or an unknown option: refused by extra="forbid" with its name
                else:
                    sections[owner][key] = value
        if limits:
            sections["policy"]["limits"] = merge_limits(sections["policy"].get("limits"), limits)
        return {**rest, **{name: section for name, section in sections.items() if section}}

    @classmethod
    def option_names(cls) -> list[str]:
        flat = set().union(*cls.SECTIONS.values()) | cls.limit_names | set(cls.SECTIONS)
        return sorted(flat - DEPRECATED_NAMES)


def _raise_file_error(r: ExecResult, path: str) -> None:
    """The exception a host-workspace backend raises for the same failure; BackendFailure when the sandbox
    itself failed (the rollout fails, not the model's call)."""
    if r.error is None:
        return
    if r.error_type in ("worker_lost", "no_slot", "sandbox_unavailable", "internal"):
        raise BackendFailure(f"sandbox {r.error_type} for {path!r}: {r.error}")
    if r.error_type == "permission_denied":
        raise WorkspacePathError(r.error)
    if r.error_type == "too_large":
        raise FileTooLargeError(r.error)
    code = r.data.get("errno")
    if isinstance(code, int):
        raise OSError(code, r.error)  # FileNotFoundError, IsADirectoryError ... as the worker saw it
    raise OSError(f"sandbox {r.error_type or 'error'} for {path!r}: {r.error}")


class SandboxBackend(ExecutionBackend):
    """One workspace per task id = one leased slot of the pool (created lazily on first use)."""

    name = "sandbox"
    options_model = SandboxOptions

    def __init__(
        self,
        pool: SlotPool | None = None,
        executor: ToolExecutor | None = None,
        *,
        pool_config: PoolConfig | None = None,
        policy: SandboxPolicy | None = None,
        executor_config: ExecutorConfig | None = None,
    ) -> None:
        self.pool = pool or SlotPool(pool_config, policy)
        self.executor = executor or ToolExecutor(self.pool, executor_config)
        self._start_lock = asyncio.Lock()
        self._started = False
        self._home: asyncio.AbstractEventLoop | None = None  # the loop the executor (and its batching) runs on

    @classmethod
    def from_config(cls, config: BaseModel) -> SandboxBackend:
        assert isinstance(config, SandboxOptions)
        return cls(pool_config=config.pool, policy=config.policy, executor_config=config.executor)

    async def _ready(self) -> None:
        if self._started:
            return
        async with self._start_lock:
            if not self._started:
                await self.executor.start()
                self._home = asyncio.get_running_loop()
                self._started = True

    async def start(self, task_id: str) -> None:
        await self._ready()
        await self.pool.acquire(task_id)

    def _foreign_loop(self) -> bool:
        """True when called from another event loop than the executor's (a synchronous ToolContext call)."""
        return self._home is not None and asyncio.get_running_loop() is not self._home

    async def _direct(self, task_id: str, tool: str, args: dict[str, Any], timeout: float | None) -> ExecResult:
        """One call straight to the slot's worker, for callers on another loop: the executor's batching
        runs on its own loop, which such a caller is blocking."""
        lease = self.pool.lease_of(task_id)
        if lease is None:
            return ExecResult.failure(
                "no_slot",
                f"{task_id} holds no sandbox slot yet; a synchronous ToolContext call reaches the slot the rollout "
                "already uses (await the call to acquire one)",
            )
        budget = CallBudget(timeout or self.executor.config.default_timeout_s, self.executor.config.transport_grace_s)
        call = SlotCall(slot=lease.slot, tool=tool, args=args, timeout=budget.timeout)
        try:
            async with (
                aiohttp.ClientSession() as session,
                session.post(
                    lease.url + "/execute",
                    data=call.model_dump_json(),
                    headers={**self.pool.auth_headers, "Content-Type": "application/json"},
                    timeout=aiohttp.ClientTimeout(total=budget.transport_limit),
                ) as resp,
            ):
                if resp.status != 200:
                    return ExecResult.failure("internal", f"worker answered {resp.status}: {(await resp.text())[:500]}")
                return ExecResult.model_validate_json(await resp.read())
        except (aiohttp.ClientError, TimeoutError) as exc:
            return ExecResult.failure("worker_lost", f"sandbox worker {lease.worker_id} did not answer: {exc}")

    async def _call(self, task_id: str, tool: str, args: dict[str, Any], timeout: float | None = None) -> ExecResult:
        if self._foreign_loop():
            return await self._direct(task_id, tool, args, timeout)
        await self._ready()
        return await self.executor.execute(task_id, tool, args, timeout)

    async def execute(self, task_id: str, command: str, timeout: float, *, stdin: str | None = None) -> ExecResult:
        args: dict[str, Any] = {"command": command}
        if stdin is not None:
            args["stdin"] = stdin
        return await self._call(task_id, "bash", args, timeout)

    async def call_tool(
        self, task_id: str, tool: str, args: dict[str, Any], timeout: float | None = None
    ) -> ExecResult:
        """Any sandbox tool (``bash_stateful``, ``tmux`` ...) or external tool, as an ExecResult."""
        return await self._call(task_id, tool, args, timeout)

    async def read_file(self, task_id: str, path: str) -> bytes:
        r = await self._call(task_id, "read_file", {"path": path})
        _raise_file_error(r, path)
        return decode_content(r)

    async def write_file(self, task_id: str, path: str, data: bytes) -> None:
        r = await self._call(task_id, "write_file", {"path": path, "content_b64": base64.b64encode(data).decode()})
        _raise_file_error(r, path)

    async def list_files(self, task_id: str, path: str = ".") -> list[str]:
        if self._foreign_loop():
            # The listing route is the worker's artifacts API; a synchronous caller lists through the shell.
            r = await self._direct(task_id, "bash", {"command": _LIST_FILES.format(path=shlex.quote(path))}, 30)
            _raise_file_error(r, path)  # a lost worker is the backend's failure, not a missing path
            if r.exit_code != 0:
                raise FileNotFoundError(r.output.strip() or f"{path!r} does not exist in the workspace")
            return sorted(line for line in r.output.splitlines() if line)
        await self._ready()
        r = await self.executor.list_artifacts(task_id, path)
        _raise_file_error(r, path)
        return list(r.data.get("files", []))

    async def cleanup(self, task_id: str) -> None:
        if self._started:
            await self.executor.release_trajectory(task_id, reset_workspace=True)

    async def aclose(self) -> None:
        await self.executor.close()
        await self.pool.close()
