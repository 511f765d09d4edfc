"""``AgentEnv``: seed 004's environment API as a front door to :class:`HermesAgentBaseEnv`.

A seed-004 environment subclasses ``AgentEnv`` and implements ``build_task(item) -> str``,
``score_trajectory(item, final_response) -> float``, ``setup_agent_env()`` and ``get_next_item()``;
optionally ``setup_trajectory_workspace(item, *, trajectory_id, exec_tool) -> dict`` and
``verify_and_score_trajectory(item, final_response, *, trajectory_id, exec_tool, agent_result,
workspace_meta) -> (score, metadata)``. Everything else is the base environment's machinery
(the same rollout, loop, phases, group handling and statistics): ``build_task`` is the prompt,
``verify_and_score_trajectory`` is the reward, ``exec_tool`` is the rollout's ToolContext (which
takes seed 004's ``ToolCall``), and the tools run on the slot pool described by
:class:`AgentEnvConfig`. Score metadata is kept with the group (``overrides[i]["score_metadata"]``)
and its numbers are logged to wandb.
"""

from __future__ import annotations

import uuid
from abc import abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

from hermes_env.agent.loop import AgentResult
from hermes_env.agent_env.config import AgentEnvConfig
from hermes_env.env.base_env import HermesAgentBaseEnv
from hermes_env.env.errors import EnvSetupError


@dataclass
class AgentConfig:
    """Per-trajectory agent settings (seed 004's ``atropos.agent.AgentConfig``)."""

    temperature: float | None = 0.7
    max_tokens: int | None = None
    max_steps: int = 50
    system_prompt: str | None = None
    tool_delay_s: float = 0.0
    working_dir: str | None = None


class AgentEnv(HermesAgentBaseEnv):
    """Seed 004's ``AgentEnv`` on hermes_env's framework (see the module docstring)."""

    env_config_cls: ClassVar[type[AgentEnvConfig]] = AgentEnvConfig
    config: AgentEnvConfig

    def __init__(self, config: AgentEnvConfig, server_configs: Any, slurm: bool = False, testing: bool = False) -> None:
        if not isinstance(config, AgentEnvConfig):
            raise TypeError(
                f"{type(self).__name__} needs an AgentEnvConfig (or a subclass), got {type(config).__name__}"
            )
        config.terminal_backend_options = config.pool_options()
        super().__init__(config, server_configs, slurm=slurm, testing=testing)

    # ------------------------------------------------------------------ seed 004's hooks
    @abstractmethod
    def build_task(self, item: Any) -> str:
        """The user-facing task for the agent."""

    @abstractmethod
    async def score_trajectory(self, item: Any, final_response: str) -> float:
        """A scalar score from the agent's final answer (used when verification is not overridden)."""

    @abstractmethod
    async def setup_agent_env(self) -> None:
        """Environment-specific setup (load the dataset...); called by ``setup``."""

    async def setup_trajectory_workspace(self, item: Any, *, trajectory_id: str, exec_tool: Any) -> dict[str, Any]:  # type: ignore[override]
        """Prepare the workspace before the agent starts (clone a repo, write fixtures); default: nothing.

        ``exec_tool(ToolCall(name, arguments))`` runs a tool in the trajectory's workspace; the
        returned dict is passed to verification as ``workspace_meta``.
        """
        return {}

    async def verify_and_score_trajectory(  # type: ignore[override]
        self,
        item: Any,
        final_response: str,
        *,
        trajectory_id: str,
        exec_tool: Any,
        agent_result: AgentResult | None = None,
        workspace_meta: dict[str, Any] | None = None,
    ) -> tuple[float, dict[str, Any]]:
        """Verify inside the trajectory's workspace before it is reset; default: ``score_trajectory``, no metadata."""
        return await self.score_trajectory(item, final_response), {}

    def build_agent_config(self, item: Any) -> AgentConfig:
        """Agent settings for one item (default: from the config)."""
        return AgentConfig(
            max_steps=self.config.max_agent_turns,
            temperature=self.config.agent_temperature,
            max_tokens=self.config.max_tokens_per_turn,
            tool_delay_s=self.config.agent_tool_delay_s,
            system_prompt=self.config.system_prompt,
        )

    def build_tools(self) -> list[Any]:
        """The tools the agent is offered (resolved from the toolsets, as seed 004's ``build_tools``)."""
        return self.resolve_group_tools().tools

    async def setup(self) -> None:
        """Start the slot pool (and the tool server), lift the server concurrency to ``group_size``, then
        ``setup_agent_env``."""
        await self.start_tool_backend()
        self._configure_server_concurrency()
        await self.setup_agent_env()

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        """Default evaluation: none (seed 004's is a no-op too)."""
        return {}

    async def run_agent(self, task: str, *, trajectory_id: str | None = None) -> tuple[str, dict[str, Any]]:
        """Run the agent on one task string: ``(final_response, debug)`` (a helper for simple envs and tests)."""
        tid = trajectory_id or str(uuid.uuid4())
        ctx = self.make_tool_context(tid)
        try:
            messages = [{"role": "user", "content": task}]
            if self.config.system_prompt:
                messages.insert(0, {"role": "system", "content": self.config.system_prompt})
            result = await self.run_agent_loop(messages, self.resolve_group_tools(), ctx)
        finally:
            self.reaper.forget(tid)
            await ctx.cleanup()
        return result.final_response, {
            "success": result.success,
            "error": result.error,
            "tool_calls": result.total_tool_calls,
        }

    async def start_tool_backend(self) -> None:
        """Start the slot pool's workers now rather than at the first tool call (idempotent)."""
        try:
            backend = self.backend
            start = getattr(backend, "start_pool", None) or getattr(backend, "_ready", None)
            if start is not None:
                await start()
        except EnvSetupError:
            raise
        except Exception as err:  # noqa: BLE001 - a pool that cannot start is a setup error with its reason
            raise EnvSetupError(
                f"AgentEnv could not start its tool pool ({self.config.tool_pool_mode}): {err}"
            ) from err
        await self.connect_tool_server()

    async def shutdown_tool_backend(self) -> None:
        """Stop the slot pool and the tool server connection (seed 004's name; ``close`` does the same)."""
        await self.close()

    def _configure_server_concurrency(self) -> None:
        """Let at least ``group_size`` model calls run at once (seed 004's fix for serialized groups)."""
        from atroposlib.envs.server_handling.server_baseline import AsyncSemWithAdaptiveWeight

        desired = int(self.config.group_size or 1)
        for server in getattr(self.server, "servers", None) or []:
            sem = getattr(server, "sem", None)
            if sem is not None and getattr(sem, "max_val", desired) < desired:
                server.sem = AsyncSemWithAdaptiveWeight(desired)
            eval_sem = getattr(server, "eval_sem", None)
            if eval_sem is not None and getattr(eval_sem, "max_val", desired) < desired:
                server.eval_sem = AsyncSemWithAdaptiveWeight(desired)

    # ------------------------------------------------------------------ the base environment's hooks
    def format_prompt(self, item: Any) -> str:
        return self.build_task(item)

    def build_messages(self, item: Any) -> list[dict[str, Any]]:
        messages = [{"role": "user", "content": self.build_task(item)}]
        prompt = self.build_agent_config(item).system_prompt
        if prompt:
            messages.insert(0, {"role": "system", "content": prompt})
        return messages

    def loop_settings(self, item: Any) -> dict[str, Any]:
        if item is None:
            return super().loop_settings(item)
        agent = self.build_agent_config(item)
        return {
            "max_turns": agent.max_steps,
            "temperature": agent.temperature if agent.temperature is not None else self.config.agent_temperature,
            "max_tokens": agent.max_tokens,
            "tool_delay_s": agent.tool_delay_s,
        }

    async def compute_reward(self, item: Any, result: AgentResult, ctx: Any) -> float:
        return await self.score_trajectory(item, result.final_response)

    async def score_rollout(
        self, item: Any, result: AgentResult, ctx: Any, *, trajectory_id: str, workspace_meta: dict[str, Any]
    ) -> float | tuple[float, dict[str, Any]]:
        return await self.verify_and_score_trajectory(
            item,
            result.final_response,
            trajectory_id=trajectory_id,
            exec_tool=ctx,
            agent_result=result,
            workspace_meta=workspace_meta,
        )
