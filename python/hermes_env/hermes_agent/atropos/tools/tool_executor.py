"""hermes-agent's ``ToolExecutor``: run a trajectory's tool calls by trajectory id, release its workspace after.

Upstream's executor batches calls onto Nomad/Modal slots; here each trajectory id is a workspace of
the environment's backend (the slot pool batches on its own), reached through a
:class:`~hermes_env.tool_context.ToolContext`: ``execute(trajectory_id, ToolCall)`` answers a
``ToolResult``; ``release_trajectory(trajectory_id)`` stops what the trajectory left running and
removes its workspace. A rollout's own ``exec_tool`` and this executor share the workspace of the
same id.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hermes_env.agent.steps import AgentToolCall as ToolCall
from hermes_env.agent.steps import ToolResult

if TYPE_CHECKING:
    from hermes_env.agent_env import AgentEnv


@dataclass
class ToolExecutorConfig:
    """Upstream's executor settings; on hermes_env these are ``AgentEnvConfig`` fields of the slot pool."""

    batch_window_ms: int = 20
    max_batch_size: int = 200
    allow_network: bool = True
    require_sandbox: bool = False
    require_stateful_sandbox: bool = False
    tool_server_url: str | None = None
    tool_server_token: str | None = None


class ToolExecutor:
    """Tool calls of trajectories, each in the workspace named by its trajectory id."""

    def __init__(self, env: AgentEnv[Any]) -> None:
        self.env = env
        self._contexts: dict[str, Any] = {}

    def context(self, trajectory_id: str) -> Any:
        """The ToolContext of ``trajectory_id``'s workspace (made on first use)."""
        ctx = self._contexts.get(trajectory_id)
        if ctx is None:
            ctx = self._contexts[trajectory_id] = self.env.make_tool_context(trajectory_id)
        return ctx

    async def execute(self, trajectory_id: str, call: ToolCall, timeout_s: float | None = None) -> ToolResult:
        if timeout_s is not None and "timeout" not in call.arguments:
            call = ToolCall(call.name, {**call.arguments, "timeout": timeout_s}, call.raw_text, call.uniq_id)
        return await self.context(trajectory_id)(call)

    async def release_trajectory(self, trajectory_id: str, reset_workspace: bool = False) -> None:
        """Forget ``trajectory_id``: its background processes stop and its workspace is removed (hermes_env never
        keeps a workspace past its trajectory, so ``reset_workspace`` changes nothing)."""
        ctx = self._contexts.pop(trajectory_id, None) or self.env.make_tool_context(trajectory_id)
        self.env.reaper.forget(trajectory_id)
        await ctx.cleanup()

    async def start(self) -> None:
        """Nothing to start: the environment's backend starts with its ``setup``."""

    async def close(self) -> None:
        for trajectory_id in list(self._contexts):
            await self.release_trajectory(trajectory_id)
