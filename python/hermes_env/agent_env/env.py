"""``AgentEnv``: the environment API of hermes-agent's ``atropos/`` integration, on :class:`HermesAgentBaseEnv`.

An environment subclasses ``AgentEnv`` (or ``AgentEnv[MyConfig]``) and implements ``build_task(item) -> str``,
``score_trajectory(item, final_response) -> float``, ``setup_agent_env()`` and ``get_next_item()``;
optionally ``setup_trajectory_workspace(item, *, trajectory_id, exec_tool) -> dict`` and
``verify_and_score_trajectory(item, final_response, *, trajectory_id, exec_tool, agent_result,
workspace_meta) -> (score, metadata)``. Everything else is the base environment's machinery
(the same rollout, loop, phases, group handling and statistics): ``build_task`` is the prompt,
``verify_and_score_trajectory`` is the reward, ``exec_tool`` is the rollout's ToolContext (which
takes a ``ToolCall``), and the tools run on the slot pool described by :class:`AgentEnvConfig`
(or on ``terminal_backend`` local, bwrap or docker when that is set). Score metadata is kept with
the group (``overrides[i]["score_metadata"]``) and its numbers are logged to wandb.

``verify_and_score_trajectory`` is called with the keywords its override accepts: hermes-agent's
signatures differ in whether they take ``agent_result`` and ``workspace_meta``, so each is passed
only where the override names it (or takes ``**kwargs``); the signature is read once per class.
The ``agent_result`` it gets is hermes_env's ``AgentResult``, which also has hermes-agent's
``steps``, ``tool_results`` and ``trajectory_data``.
"""

from __future__ import annotations

import functools
import inspect
import uuid
from abc import abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from hermes_env.agent.loop import AgentResult
from hermes_env.agent.steps import SequenceData
from hermes_env.agent_env.config import AgentEnvConfig
from hermes_env.env.base_env import HermesAgentBaseEnv
from hermes_env.errors import EnvSetupError


@dataclass
class AgentConfig:
    """Per-trajectory agent settings (hermes-agent's ``atropos.agent.AgentConfig``)."""

    temperature: float | None = 0.7
    max_tokens: int | None = None
    max_steps: int = 50
    system_prompt: str | None = None
    tool_delay_s: float = 0.0
    working_dir: str | None = None


ConfigT = TypeVar("ConfigT", bound=AgentEnvConfig)

# Keywords of verify_and_score_trajectory that some overrides leave out: passed only where accepted.
_OPTIONAL_VERIFY_KEYWORDS = ("agent_result", "workspace_meta")


class AgentEnv(HermesAgentBaseEnv, Generic[ConfigT]):
    """hermes-agent's ``AgentEnv`` on hermes_env's framework (see the module docstring); ``AgentEnv[MyConfig]``
    types ``self.config`` as ``MyConfig``."""

    env_config_cls: ClassVar[type[AgentEnvConfig]] = AgentEnvConfig
    config: ConfigT
    _verify_keywords_by_class: ClassVar[dict[type, frozenset[str]]] = {}

    def __init__(self, config: ConfigT, server_configs: Any, slurm: bool = False, testing: bool = False) -> None:
        if not isinstance(config, AgentEnvConfig):
            raise TypeError(
                f"{type(self).__name__} needs an AgentEnvConfig (or a subclass), got {type(config).__name__}"
            )
        config.terminal_backend_options = config.backend_options()
        super().__init__(config, server_configs, slurm=slurm, testing=testing)

    # ------------------------------------------------------------------ the AgentEnv hooks
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
        """The tools the agent is offered (resolved from the toolsets)."""
        return self.resolve_group_tools().tools

    async def setup(self) -> None:
        """Start the slot pool (and the tool server), lift the server concurrency to ``group_size``, then
        ``setup_agent_env``."""
        await self.start_tool_backend()
        self._configure_server_concurrency()
        await self.setup_agent_env()

    async def evaluate(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        """Default evaluation: none (hermes-agent's is a no-op too)."""
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
        """Stop the slot pool and the tool server connection (``close`` does the same)."""
        await self.close()

    def _configure_server_concurrency(self) -> None:
        """Let at least ``group_size`` model calls run at once (else a group's rollouts would wait on each other)."""
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

    @classmethod
    def verify_keywords(cls) -> frozenset[str]:
        """Which of ``agent_result`` / ``workspace_meta`` this class's ``verify_and_score_trajectory`` accepts."""
        known = AgentEnv._verify_keywords_by_class.get(cls)
        if known is None:
            params = inspect.signature(cls.verify_and_score_trajectory).parameters.values()
            if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
                known = frozenset(_OPTIONAL_VERIFY_KEYWORDS)
            else:
                named = {p.name for p in params if p.kind is not inspect.Parameter.POSITIONAL_ONLY}
                known = frozenset(k for k in _OPTIONAL_VERIFY_KEYWORDS if k in named)
            AgentEnv._verify_keywords_by_class[cls] = known
        return known

    async def score_rollout(
        self, item: Any, result: AgentResult, ctx: Any, *, trajectory_id: str, workspace_meta: dict[str, Any]
    ) -> float | tuple[float, dict[str, Any]]:
        optional = {"agent_result": result, "workspace_meta": workspace_meta}
        accepted = self.verify_keywords()
        return await self.verify_and_score_trajectory(
            item,
            result.final_response,
            trajectory_id=trajectory_id,
            exec_tool=ctx,
            **{k: v for k, v in optional.items() if k in accepted},
        )

    async def run_agent_loop(
        self, messages: list[dict[str, Any]], group: Any, ctx: Any, split: str = "train", item: Any = None
    ) -> AgentResult:
        result = await super().run_agent_loop(messages, group, ctx, split, item)
        result.trajectory_loader = functools.partial(self._trajectory_data, result, group.schemas)
        return result

    def _trajectory_data(self, result: AgentResult, tool_schemas: list[dict[str, Any]]) -> SequenceData | None:
        return sequence_data(result, self.phase, self.tokenizer, tool_schemas)


def sequence_data(
    result: AgentResult, phase: str, tokenizer: Any, tool_schemas: list[dict[str, Any]]
) -> SequenceData | None:
    """``agent_result.trajectory_data``: the tokens a rollout is trained on, as hermes-agent shapes them
    (Phase 2: the managed server's tokens and sampler logprobs; Phase 1: the rendered conversation, logprobs 0.0
    on trained tokens as upstream's fallback); None for a rollout without output."""
    from hermes_env.env.phases import phase1_item, phase2_item
    from hermes_env.trajectory import MASK, PROMPT_LOGPROB

    if not result.produced_output:
        return None
    if phase == "managed":
        item = phase2_item(result.managed_state, 0.0)
        if item is None:
            return None
        logprobs = [float(x) for x in item["inference_logprobs"]]
    else:
        item = phase1_item(tokenizer, result.messages, tool_schemas)
        logprobs = [PROMPT_LOGPROB if m == MASK else 0.0 for m in item["masks"]]
    tokens = list(item["tokens"])
    return SequenceData(
        full_text=tokenizer.decode(tokens),
        tokens=tokens,
        masked_tokens=list(item["masks"]),
        logprobs=logprobs,
        metadata={"phase": phase},
    )
