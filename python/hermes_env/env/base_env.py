"""HermesAgentBaseEnv: an atroposlib BaseEnv whose rollouts are tool-using agent loops.

A subclass implements ``setup``, ``get_next_item``, ``format_prompt(item)``,
``compute_reward(item, result, ctx)`` and ``evaluate``; this class does the rest:

- resolves the toolsets once per group (``enabled_toolsets``/``disabled_toolsets`` or a sampled
  ``distribution``) and runs ``group_size`` rollouts of :class:`HermesAgentLoop` concurrently,
  each in its own workspace on the configured backend, sharing one bounded tool pool;
- Phase 1 or Phase 2 (see :mod:`hermes_env.env.phases`), chosen from the server type;
- scores each rollout with the rollout's own sandbox still alive (``verify_and_score_trajectory``,
  by default ``compute_reward``): a rollout in which the model produced nothing scores 0.0
  without calling the reward, a reward that raises is logged and scores 0.0, and the
  workspace is always cleaned up;
- sends only complete groups of finished rollouts: if any rollout of a group failed (a model
  call that failed on any turn, a tool backend that died, a workspace that could not be set up;
  kinds in :mod:`hermes_env.errors`), the whole group is dropped — never written, never sent —
  logged once at WARNING with its cause and counted by cause;
- records why each written rollout ended (``end_reasons`` in the group: stop, length,
  turn_limit, context_limit, rollout_budget, repeated_tool_calls);
- ``serve``/``process``/``evaluate`` come from :class:`~hermes_env.env.run_modes.RunModesMixin`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import logging
import math
import os
import random
import time
import uuid
from abc import abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from atroposlib.envs.base import BaseEnv, ScoredDataGroup

from hermes_env.agent.loop import AgentResult, HermesAgentLoop
from hermes_env.agent.tool_pool import ToolWorkerPool
from hermes_env.containers.images import ImageSpec
from hermes_env.env.config import HermesAgentEnvConfig
from hermes_env.env.defaults import (
    default_server_config,
    default_tokenizer_name,
    resolve_tokenizer_names,
    tokenizer_load_error,
)
from hermes_env.env.output import replace_atropos_writer
from hermes_env.env.phases import ResolvedPhase, phase1_item, phase2_item, prompt_only_item, resolve_phase
from hermes_env.env.rollout_info import rollout_info
from hermes_env.env.run_api_link import RunApiLinkMixin
from hermes_env.env.run_modes import RunModesMixin
from hermes_env.env.stats import RolloutRecord, RolloutStats, wandb_table
from hermes_env.env.turn_credit import builtin_turn_rewards, check_turn_rewards, group_advantages
from hermes_env.env.wandb_extras import ScoreMetadataLog, ToolErrorLog
from hermes_env.env.workspace_reaper import WorkspaceReaper
from hermes_env.errors import (
    BackendFailure,
    EnvSetupError,
    JudgeError,
    RolloutFailed,
    RolloutFailureKind,
    TeacherError,
    ToolServerError,
    TurnRewardError,
)
from hermes_env.trajectory import PROMPT_LOGPROB

logger = logging.getLogger(__name__)


# Per-request lists on atroposlib's APIServer (server_baseline), emptied after each wandb step.
_SERVER_HISTORIES = ("request_timings", "attempts_list", "eval_request_timings", "eval_attempts_list")


@dataclass
class GroupTools:
    """The tools of one group: resolved once, shared by its rollouts."""

    toolsets: tuple[str, ...]
    tools: list[Any]

    @property
    def schemas(self) -> list[dict[str, Any]]:
        return [tool.schema for tool in self.tools]


def split_score(scored: Any) -> tuple[float, dict[str, Any]]:
    """``(score, metadata)`` from a reward hook's answer: a number, or AgentEnv's ``(score, metadata)``."""
    if isinstance(scored, tuple):
        if len(scored) != 2 or not isinstance(scored[1], dict | type(None)):
            raise TypeError(f"a reward hook returned {scored!r}; return a number or (score, metadata dict)")
        return float(scored[0]), dict(scored[1] or {})
    return float(scored), {}


def _raise_backend_failure(ctx: Any) -> None:
    """Re-raise the BackendFailure a ToolContext call met, if any (a caller may have caught it)."""
    failure = getattr(ctx, "backend_failure", None)
    if failure is not None:
        raise failure


class HermesAgentBaseEnv(RunModesMixin, RunApiLinkMixin, BaseEnv):
    """Base class of hermes_env environments."""

    env_config_cls = HermesAgentEnvConfig
    config: HermesAgentEnvConfig

    @classmethod
    def config_init(cls) -> tuple[HermesAgentEnvConfig, list[Any]]:
        """Defaults for the command line: the bundled Qwen3 tokenizer, wandb off, a local vLLM server, groups
        of 4, and ``total_steps=-1``: ``serve`` runs as many steps as the trainer registered for, ``process``
        writes PROCESS_DEFAULT_GROUPS groups (``--env.total_steps`` sets either).

        Subclasses override this to change defaults; returning a list of ``APIServerConfig`` (not
        atroposlib's ``ServerBaseline``) is what lets ``--openai.*`` flags apply.
        """
        config = cls.env_config_cls(
            tokenizer_name=default_tokenizer_name(), use_wandb=False, wandb_name=cls.name, total_steps=-1, group_size=4
        )
        return config, [default_server_config()]

    @classmethod
    def cli(cls) -> None:
        """``serve``/``process``/``evaluate`` from the command line, with one-line errors (see env/cli.py)."""
        from hermes_env.env.cli import configure_logging, run_cli

        configure_logging()
        run_cli(cls)

    def __init__(
        self, config: HermesAgentEnvConfig, server_configs: Any, slurm: bool = False, testing: bool = False
    ) -> None:
        requested_output = config.data_path_to_save_groups  # atroposlib may move on to <stem>_1.jsonl
        tokenizer_names = resolve_tokenizer_names(config, server_configs)
        try:
            super().__init__(config, server_configs, slurm=slurm, testing=testing)
        except OSError as err:  # transformers' "couldn't connect to huggingface.co" / "not a folder"
            raise tokenizer_load_error(err, tokenizer_names) from None
        self.phase: ResolvedPhase = resolve_phase(config.phase, self.server)
        self.tool_call_parser = config.tool_call_parser or self._detect_parser()
        self.tool_pool = ToolWorkerPool(config.tool_pool_size)
        self.rollout_stats = RolloutStats(keep_readable=config.num_rollouts_to_keep)
        self.tool_error_log = ToolErrorLog()  # hermes-agent's train/tool_errors_count and tool_error_details
        self.score_metadata_log = ScoreMetadataLog()
        self._rng = random.Random(config.seed)
        self._backend: Any = None
        self.reaper = WorkspaceReaper(config.terminal_lifetime)
        self.tool_server: Any = None  # ToolServerClient once connect_tool_server ran
        self._groups_collected = 0
        self.teacher, self.hint_judge = self._make_teacher(config)
        self.reward_judge = self._make_reward_judge(config)
        # atroposlib opened a buffered jsonlines writer; replace it with one that writes whole lines.
        if self.jsonl_writer is not None:
            self.jsonl_writer = replace_atropos_writer(
                self.jsonl_writer, requested_output or "", self.config.data_path_to_save_groups
            )
        logger.info(
            "%s: phase=%s, tool_call_parser=%s, backend=%s",
            type(self).__name__,
            self.phase,
            self.tool_call_parser,
            config.terminal_backend,
        )

    # ------------------------------------------------------------------ subclass API
    @abstractmethod
    def format_prompt(self, item: Any) -> str | list[dict[str, Any]]:
        """The user message for ``item`` (a string), or the whole opening conversation."""

    @abstractmethod
    async def compute_reward(self, item: Any, result: AgentResult, ctx: Any) -> float:
        """Score a finished rollout; ``ctx`` is its ToolContext, with the rollout's sandbox still alive."""

    async def compute_turn_rewards(self, item: Any, result: AgentResult, ctx: Any) -> list[float] | None:
        """One reward per assistant turn (``result.turns_used`` of them), or None for no turn rewards.

        Called after the outcome reward, with the rollout's sandbox still alive; may be a plain ``def``.
        The group's rewards become per-token ``advantages`` (:mod:`hermes_env.env.turn_credit`). Default:
        the built-ins weighted by ``turn_reward_builtins`` (e.g. ``{"tool_failed": -0.5}``), or None
        when it is unset. A list of the wrong length, or a value that is not a finite number, fails
        the rollout (``turn_rewards_invalid``) with a message naming what was expected.
        """
        if not self.config.turn_reward_builtins:
            return None
        return builtin_turn_rewards(result, self.config.turn_reward_builtins)  # type: ignore[arg-type]

    async def setup_trajectory_workspace(self, item: Any, trajectory_id: str, exec_tool: Any) -> dict[str, Any] | None:
        """Prepare a rollout's workspace before the model's first turn (default: nothing).

        Called with keyword arguments (``trajectory_id=..., exec_tool=...``), so AgentEnv's
        keyword-only signature works too. ``exec_tool`` is the rollout's ToolContext:
        ``exec_tool.upload_dir(...)``, ``exec_tool.terminal(...)``, ``exec_tool.call_tool(name, args)``,
        or called with a ``ToolCall``. A dict returned here is the rollout's workspace
        metadata (AgentEnv's ``workspace_meta``).
        """
        return None

    async def verify_and_score_trajectory(
        self, item: Any, result: AgentResult, ctx: Any
    ) -> float | tuple[float, dict[str, Any]]:
        """The rollout's score, computed before its workspace is reset (default: ``compute_reward``).

        May return ``(score, metadata)``: the metadata is kept with the group (``overrides[i]
        ["score_metadata"]``) and its numbers are logged. ``compute_reward`` may be ``async def`` or
        a plain ``def`` (hermes-agent's reward code, synchronous ToolContext calls included).
        """
        reward = self.compute_reward(item, result, ctx)
        return await reward if inspect.isawaitable(reward) else reward

    # ------------------------------------------------------------------ plumbing
    def _detect_parser(self) -> str:
        try:
            from hermes_env.parsers import detect_parser
        except ImportError:
            return "hermes"
        try:
            return detect_parser(self.tokenizer) or "auto"
        except Exception as err:  # noqa: BLE001 - detection is a convenience; fall back loudly
            logger.warning(
                "could not detect the tool-call parser from the tokenizer (%s); using 'auto' (the format is "
                "picked from each output's markers; set --env.tool_call_parser to fix it)",
                err,
            )
            return "auto"

    @property
    def backend(self) -> Any:
        """The execution backend (created on first use, shared by all rollouts of this process)."""
        if self._backend is None:
            from hermes_env.backends import get_backend

            self._backend = get_backend(self.config.terminal_backend, **self.config.terminal_backend_options)
        return self._backend

    async def connect_tool_server(self) -> None:
        """Register the tool server's tools (``tool_server_url``) once; EnvSetupError if it cannot be reached."""
        if self.config.tool_server_url is None or self.tool_server is not None:
            return
        from hermes_env.tools.external import connect_tool_server
        from hermes_env.tools.toolsets import resolve_toolsets

        token = self.config.tool_server_token or os.environ.get("HERMES_TOOL_SERVER_TOKEN")
        try:
            self.tool_server, names = await connect_tool_server(
                self.config.tool_server_url, token, tools_spec=self.config.tool_server_tools
            )
        except (ToolServerError, ValueError, ImportError) as err:
            raise EnvSetupError(str(err)) from err
        logger.info("tool server %s provides: %s", self.config.tool_server_url, ", ".join(names) or "no tools")
        if self.config.enabled_toolsets is not None:
            try:
                resolve_toolsets(self.config.enabled_toolsets, self.config.disabled_toolsets)
            except ValueError as err:
                raise EnvSetupError(str(err)) from err

    async def disconnect_tool_server(self) -> None:
        if self.tool_server is not None:
            server, self.tool_server = self.tool_server, None
            await server.aclose()

    def resolve_group_tools(self) -> GroupTools:
        """The tools of the next group: sampled from ``distribution`` or ``enabled_toolsets``, minus disabled."""
        from hermes_env.tools.distributions import sample_toolsets_from_distribution
        from hermes_env.tools.toolsets import resolve_toolsets, tools_for_toolsets

        disabled = self.config.disabled_toolsets
        if self.config.distribution is not None:
            drawn = sample_toolsets_from_distribution(self.config.distribution, self._rng)
            toolsets = resolve_toolsets([t for t in drawn if t not in set(disabled or ())], disabled)
        else:
            toolsets = resolve_toolsets(self.config.enabled_toolsets, disabled)
        return GroupTools(toolsets=tuple(toolsets), tools=tools_for_toolsets(toolsets, disabled))

    def build_messages(self, item: Any) -> list[dict[str, Any]]:
        prompt = self.format_prompt(item)
        messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else [dict(m) for m in prompt]
        if self.config.system_prompt and not any(m.get("role") == "system" for m in messages):
            messages.insert(0, {"role": "system", "content": self.config.system_prompt})
        return messages

    def task_images_dir(self) -> Path:
        """Where an item's ``dockerfile`` paths are relative to (default: the working directory)."""
        return Path.cwd()

    def task_image(self, item: Any) -> ImageSpec | None:
        """The container image ``item``'s rollouts run in on a backend with images (``terminal_backend: docker``).

        Default: the item's ``image`` (an image name) or ``dockerfile`` (a recipe, relative to
        :meth:`task_images_dir`); None (neither) runs the backend's default image.
        """
        return ImageSpec.from_item(item, self.task_images_dir())

    def use_task_image(self, item: Any, trajectory_id: str) -> None:
        """Tell the backend which image the rollout runs in; a task that needs one fails on a backend without."""
        image = self.task_image(item)
        if image is None:
            return
        if not self.backend.supports_images:
            raise RolloutFailed(
                f"this task needs the container image {image.describe()}, but terminal_backend "
                f"{self.config.terminal_backend!r} runs no images; use terminal_backend docker",
                "workspace_setup_failed",
            )
        self.backend.use_image(trajectory_id, image)

    def make_tool_context(self, trajectory_id: str) -> Any:
        """The rollout's ToolContext; its ``run_context`` is what the model's tool calls run with.

        Its backend is watched by the reaper: a workspace idle longer than ``terminal_lifetime``
        is destroyed and its rollout fails.
        """
        from hermes_env.tool_context import ToolContext
        from hermes_env.tools.process_tool import has_running_processes

        backend = self.reaper.watch(trajectory_id, self.backend)
        ctx = ToolContext(
            trajectory_id, backend, timeout=self.config.terminal_timeout, background_timeout=self.config.rollout_timeout
        )
        backend.keep_alive_while(lambda: has_running_processes(ctx.run_context.state))
        return ctx

    def loop_settings(self, item: Any) -> dict[str, Any]:
        """Per-item overrides of the agent loop's settings (``max_turns``, ``temperature``, ``max_tokens``,
        ``tool_delay_s``); default: none, the config decides."""
        return {}

    def _loop(
        self, server: Any, group: GroupTools, ctx: Any, split: str = "train", settings: dict[str, Any] | None = None
    ) -> HermesAgentLoop:
        # ServerManager routes split="eval" calls to its eval semaphore (the managed server passes it through).
        sampling: dict[str, Any] = {"split": split}
        ctx.run_context.enabled_tools = tuple(tool.name for tool in group.tools)
        kwargs: dict[str, Any] = {
            "max_turns": self.config.max_agent_turns,
            "temperature": self.config.agent_temperature,
            "max_tokens": self.config.max_tokens_per_turn,
            "tool_timeout": self.config.terminal_timeout,
            "rollout_timeout": self.config.rollout_timeout,
            "extra_body": self.request_extra_body(),
            "sampling": sampling,
            "max_context_tokens": self.config.max_token_length if self.config.max_token_length > 0 else None,
            "max_repeated_tool_calls": self.config.max_repeated_tool_calls,
        }
        kwargs.update(settings or {})
        return HermesAgentLoop(server, group.tools, ctx.run_context, pool=self.tool_pool, **kwargs)

    def request_extra_body(self) -> dict[str, Any] | None:
        """``extra_body`` of each model call; ``thinking_mode`` asks the chat template for thinking
        (``chat_template_kwargs.enable_thinking``, read by vLLM, SGLang and the managed server)."""
        extra = dict(self.config.extra_body or {})
        if self.config.thinking_mode:
            extra["chat_template_kwargs"] = {"enable_thinking": True, **(extra.get("chat_template_kwargs") or {})}
        return extra or None

    async def run_agent_loop(
        self, messages: list[dict[str, Any]], group: GroupTools, ctx: Any, split: str = "train", item: Any = None
    ) -> AgentResult:
        """One agent loop in the configured phase (the managed session lives exactly as long as the loop)."""
        settings = self.loop_settings(item)
        if self.phase == "managed":
            from hermes_env.managed import managed_server

            async with managed_server(
                self.server,
                self.tokenizer,
                tool_parser=self.tool_call_parser,
                divergence_policy=self.config.divergence_policy,
            ) as managed:
                return await self._loop(managed, group, ctx, split, settings).run(messages)
        return await self._loop(self.server, group, ctx, split, settings).run(messages)

    async def rollout(
        self, item: Any, group: GroupTools, index: int, split: str = "train"
    ) -> tuple[dict[str, Any], RolloutRecord]:
        """One scored rollout: workspace, agent loop, reward, cleanup. Raises RolloutFailed when unusable."""
        trajectory_id = f"{self.name or type(self).__name__}-{uuid.uuid4().hex[:12]}-{index}"
        ctx = self.make_tool_context(trajectory_id)
        try:
            self.use_task_image(item, trajectory_id)
            try:
                # Setup is bounded by the workspace's lifetime, as the rollout once was as a whole.
                async with asyncio.timeout(self.config.terminal_lifetime):
                    meta = await self.prepare_workspace(item, trajectory_id, ctx)
            except TimeoutError:
                raise RolloutFailed(
                    f"setup_trajectory_workspace of {trajectory_id} took longer than "
                    f"terminal_lifetime={self.config.terminal_lifetime:g}s",
                    "workspace_setup_failed",
                ) from None
            _raise_backend_failure(ctx)  # setup caught the failure itself; the workspace is still unusable
            workspace_meta = meta if isinstance(meta, dict) else {}
            messages = self.build_messages(item)
            loop_started = time.monotonic()
            result = await self.run_agent_loop(messages, group, ctx, split, item)
            loop_seconds = time.monotonic() - loop_started
            self.reaper.check(trajectory_id)
            if result.failure is not None:
                # A rollout cut short by a failure is never scored or trained on, whatever it produced.
                raise RolloutFailed(result.failure.message, result.failure.kind)
            sequence = self._sequence_item(result, group)
            # The teacher (and its hint judge) work while the reward runs: off the rollout's critical path.
            distilling = (
                asyncio.create_task(self._distill(item, result, group, sequence))
                if self.teacher is not None and split == "train"
                else None
            )
            try:
                score, reward_error, metadata = 0.0, None, {}
                turn_rewards: list[float] | None = None
                judged = None
                if result.produced_output:
                    ctx.command_log = []  # what the reward runs, for the HTML view
                    score, reward_error, metadata = await self._score(item, result, ctx, trajectory_id, workspace_meta)
                    turn_rewards = await self._turn_rewards(item, result, ctx, trajectory_id)
                    judged = await self._rubric(item, result) if self.config.judge_reward == "rubric" else None
                self.reaper.check(trajectory_id)
                distill = await distilling if distilling is not None else None
            finally:
                if distilling is not None and not distilling.done():
                    distilling.cancel()
            if judged is not None:
                score += self.config.judge_weight * judged["score"]
            scored, record = self._scored_item(result, group, score, reward_error is not None, metadata, sequence)
            scored["rollout_info"] = rollout_info(
                item,
                result,
                score=score,
                toolsets=group.toolsets,
                checks=getattr(ctx, "command_log", None) or (),
                reward_error=reward_error,
            )
            scored["rollout_info"]["loop_seconds"] = round(loop_seconds, 3)
            if judged is not None:
                scored["rollout_info"]["judge"] = judged
            if turn_rewards is not None:
                scored["turn_rewards"] = turn_rewards
                scored["rollout_info"]["turn_rewards"] = turn_rewards
            if distill is not None:
                scored["distill_token_ids"], scored["distill_logprobs"], scored["rollout_info"]["distill"] = distill
            return scored, record
        except RolloutFailed:
            raise
        except BackendFailure as err:  # workspace setup or reward on a backend that failed
            raise RolloutFailed(f"the tool backend failed for {trajectory_id}: {err}", "sandbox_failed") from None
        finally:
            self.reaper.forget(trajectory_id)
            try:
                await ctx.cleanup()
            except Exception:  # noqa: BLE001 - cleanup failure must not hide the rollout's outcome
                logger.exception("cleanup of %s failed", trajectory_id)

    async def prepare_workspace(self, item: Any, trajectory_id: str, ctx: Any) -> dict[str, Any] | None:
        """The workspace hook a rollout calls before the first turn (default:
        ``setup_trajectory_workspace(item, trajectory_id=..., exec_tool=ctx)``)."""
        return await self.setup_trajectory_workspace(item, trajectory_id=trajectory_id, exec_tool=ctx)

    async def score_rollout(
        self, item: Any, result: AgentResult, ctx: Any, *, trajectory_id: str, workspace_meta: dict[str, Any]
    ) -> float | tuple[float, dict[str, Any]]:
        """The scoring hook a rollout calls (default: ``verify_and_score_trajectory(item, result, ctx)``)."""
        return await self.verify_and_score_trajectory(item, result, ctx)

    async def _score(
        self, item: Any, result: AgentResult, ctx: Any, trajectory_id: str, workspace_meta: dict[str, Any]
    ) -> tuple[float, str | None, dict[str, Any]]:
        """(score, why the reward failed or None, score metadata); a failed reward scores 0.0."""
        try:
            async with asyncio.timeout(self.config.reward_timeout):
                scored = await self.score_rollout(
                    item, result, ctx, trajectory_id=trajectory_id, workspace_meta=workspace_meta
                )
            score, metadata = split_score(scored)
        except BackendFailure:
            raise  # the sandbox died under the reward: the rollout fails, it does not score 0.0
        except TimeoutError:
            _raise_backend_failure(ctx)
            logger.error(
                "compute_reward for %s did not finish within reward_timeout=%gs; scoring it 0.0",
                trajectory_id,
                self.config.reward_timeout,
            )
            return 0.0, f"did not finish within reward_timeout={self.config.reward_timeout:g}s", {}
        except Exception as err:  # noqa: BLE001 - a broken reward scores 0.0; the run goes on
            _raise_backend_failure(ctx)  # ... unless it broke because the sandbox died under it
            logger.exception("compute_reward raised for %s; scoring it 0.0", trajectory_id)
            return 0.0, f"raised {type(err).__name__}: {err}", {}
        # A reward that caught the backend's failure (upstream rewards often catch everything) and
        # scored anyway scored a dead sandbox: the rollout fails.
        _raise_backend_failure(ctx)
        if not math.isfinite(score):
            logger.error("compute_reward returned %r for %s; scoring it 0.0", score, trajectory_id)
            return 0.0, f"returned {score!r}", metadata
        return score, None, metadata

    def _sequence_item(self, result: AgentResult, group: GroupTools) -> dict[str, Any]:
        """The rollout's ``tokens`` / ``masks`` (and ``inference_logprobs`` in Phase 2), before it is scored."""
        if not result.produced_output:
            return prompt_only_item(self.tokenizer, result.messages, group.schemas)
        if self.phase == "managed":
            item = phase2_item(result.managed_state, 0.0)
            if item is None:
                raise RolloutFailed(
                    "the managed server recorded no trajectory for a rollout that produced output", "no_trajectory"
                )
            return item
        return phase1_item(self.tokenizer, result.messages, group.schemas)

    def _scored_item(
        self,
        result: AgentResult,
        group: GroupTools,
        score: float,
        reward_failed: bool,
        metadata: dict[str, Any] | None = None,
        sequence: dict[str, Any] | None = None,
    ) -> tuple[dict[str, Any], RolloutRecord]:
        item = dict(sequence) if sequence is not None else self._sequence_item(result, group)
        item["scores"] = score
        item["messages"] = result.messages
        item["score_metadata"] = metadata or {}
        record = RolloutRecord.from_result(
            result, score=score, masks=item["masks"], reward_failed=reward_failed, toolsets=group.toolsets
        )
        self.tool_error_log.add(result.tool_errors)
        self.score_metadata_log.add(item["score_metadata"])
        return item, record

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        """``group_size`` concurrent rollouts of ``item``; None (nothing sent) unless all of them finished."""
        self._groups_collected += 1
        number = self._groups_collected
        group_tools = self.resolve_group_tools()
        outcomes = await asyncio.gather(
            *(self.rollout(item, group_tools, i) for i in range(self.config.group_size)), return_exceptions=True
        )
        failures = [o for o in outcomes if isinstance(o, BaseException)]
        if any(isinstance(f, asyncio.CancelledError) for f in failures):
            raise asyncio.CancelledError  # the run is stopping: not a dropped group
        if failures:
            self._drop_group(number, item, failures, len(outcomes))
            return None, []
        if self.config.judge_reward == "ranking":
            try:
                await self._rank_group(item, outcomes)  # type: ignore[arg-type]
            except RolloutFailed as err:
                self._drop_group(number, item, [err], len(outcomes))
                return None, []
        group = ScoredDataGroup(tokens=[], masks=[], scores=[], messages=[], overrides=[])
        group["rollout_info"] = []  # type: ignore[typeddict-unknown-key]  # see hermes_env.env.rollout_info
        if self.phase == "managed" or any("inference_logprobs" in o[0] for o in outcomes):
            group["inference_logprobs"] = []
        group["end_reasons"] = []  # type: ignore[typeddict-unknown-key]  # why each rollout ended; trainers ignore it
        records = []
        for scored, record in outcomes:  # type: ignore[misc]
            group["tokens"].append(scored["tokens"])
            group["masks"].append(scored["masks"])
            group["scores"].append(scored["scores"])
            group["messages"].append(scored["messages"])
            # Score metadata (verify_and_score_trajectory's second value) travels with the group.
            group["overrides"].append({"score_metadata": scored.get("score_metadata") or {}})
            group["rollout_info"].append(scored["rollout_info"])
            if "inference_logprobs" in group:
                group["inference_logprobs"].append(
                    scored.get("inference_logprobs") or [PROMPT_LOGPROB] * len(scored["tokens"])
                )
            group["end_reasons"].append(record.end_reason)  # type: ignore[typeddict-item]
            records.append(record)
        try:
            self._add_advantages(group, [o[0] for o in outcomes], records)  # type: ignore[index]
        except TurnRewardError as err:  # e.g. Phase 1 training assistant turns that were prompt
            self._drop_group(number, item, [RolloutFailed(str(err), "turn_rewards_invalid")], len(outcomes))
            return None, []
        self._add_distill(group, [o[0] for o in outcomes])  # type: ignore[index]
        if not self.config.include_messages:
            group["messages"] = None
        if not any(o["score_metadata"] for o in group["overrides"]):
            group["overrides"] = None
        self.rollout_stats.add_group(records)
        # num_rollouts_per_group_for_logging readable rollouts (-1: all), best scores first.
        keep = self.config.num_rollouts_per_group_for_logging
        ranked = sorted(range(len(records)), key=lambda i: records[i].score, reverse=True)
        for i in ranked[: len(ranked) if keep == -1 else max(keep, 0)]:
            scored = outcomes[i][0]  # type: ignore[index]
            self.rollout_stats.add_readable(scored["messages"], records[i].score, scored.get("score_metadata"))
        return group, []

    def _drop_group(self, number: int, item: Any, failures: list[BaseException], rollouts: int) -> None:
        """Counts a dropped group under its first failure's kind and logs it once."""
        kinds: list[RolloutFailureKind] = [
            f.kind if isinstance(f, RolloutFailed) else "rollout_error" for f in failures
        ]
        from hermes_env.env.run_modes import GROUP_DROPPED

        noted = GROUP_DROPPED.get()
        if noted is not None:
            noted.append(kinds[0])
        self.rollout_stats.drop_group(kinds[0])
        self.last_drop_reason = f"{kinds[0]}: {failures[0]}"  # the stop line of process quotes it
        label = item.get("id") if isinstance(item, dict) and "id" in item else None
        where = f"group {number}" + (f" (item {label!r})" if label is not None else "")
        others = sorted(set(kinds[1:]) - {kinds[0]})
        also = f" (also: {', '.join(others)})" if others else ""
        bug = next((f for f in failures if not isinstance(f, RolloutFailed)), None)
        message = "dropping %s: %d of %d rollouts failed; %s: %s%s"
        args = (where, len(failures), rollouts, kinds[0], failures[0], also)
        if bug is not None:  # an unexpected exception is a bug: keep its traceback
            logger.error(message, *args, exc_info=bug)
        else:
            logger.warning(message, *args)

    # ------------------------------------------------------------------ turn credit and distillation
    async def _turn_rewards(self, item: Any, result: AgentResult, ctx: Any, trajectory_id: str) -> list[float] | None:
        rewards = self.compute_turn_rewards(item, result, ctx)
        if inspect.isawaitable(rewards):
            rewards = await rewards
        _raise_backend_failure(ctx)
        if rewards is None:
            return None
        try:
            return check_turn_rewards(rewards, result.turns_used, source=f"{type(self).__name__}.compute_turn_rewards")
        except TurnRewardError as err:
            raise RolloutFailed(f"{trajectory_id}: {err}", "turn_rewards_invalid") from None

    def _add_advantages(self, group: Any, scored: list[dict[str, Any]], records: list[RolloutRecord]) -> None:
        """``advantages`` of the group when any rollout has turn rewards (a rollout without: 0.0 per turn)."""
        if all(s.get("turn_rewards") is None for s in scored):
            return
        rewards = [
            s["turn_rewards"] if s.get("turn_rewards") is not None else [0.0] * int(s["rollout_info"]["turns"])
            for s in scored
        ]
        group["advantages"] = group_advantages(
            group["scores"],
            group["masks"],
            rewards,
            credit=self.config.turn_credit,
            gamma=self.config.turn_credit_gamma,
            weight=self.config.turn_credit_weight,
            normalize_turns=self.config.turn_credit_normalize,
        )

    def _add_distill(self, group: Any, scored: list[dict[str, Any]]) -> None:
        """``distill_token_ids`` / ``distill_logprobs`` of the group when a teacher scored it."""
        if self.teacher is None or not any("distill_token_ids" in s for s in scored):
            return
        from hermes_env.distill import filler_row

        ids_rows, lp_rows = [], []
        for s in scored:
            if "distill_token_ids" in s:
                ids_rows.append(s["distill_token_ids"])
                lp_rows.append(s["distill_logprobs"])
            else:  # a rollout with nothing trained: the filler everywhere
                fill_ids, fill_lps = filler_row(self.teacher.top_k)
                ids_rows.append([list(fill_ids) for _ in s["tokens"]])
                lp_rows.append([list(fill_lps) for _ in s["tokens"]])
        group["distill_token_ids"] = ids_rows
        group["distill_logprobs"] = lp_rows

    def _make_reward_judge(self, config: HermesAgentEnvConfig) -> Any:
        if config.judge_reward == "off" or config.judge_base_url is None:
            return None
        from hermes_env.judges import JudgeChat
        from hermes_env.judges.rewards import RankingJudge, RubricJudge

        chat = JudgeChat(
            config.judge_base_url,
            model=config.judge_model,
            max_tokens=config.judge_max_tokens,
            temperature=config.judge_temperature,
        )
        if config.judge_reward == "rubric":
            return RubricJudge(chat, config.judge_rubric or "", votes=config.judge_votes)
        return RankingJudge(chat)

    def judge_task_text(self, item: Any) -> str:
        """The task as the reward judge reads it (default: the prompt's last user message)."""
        prompt = self.format_prompt(item)
        if isinstance(prompt, str):
            return prompt
        users = [m.get("content") for m in prompt if m.get("role") == "user"]
        return str(users[-1] if users else "")

    async def _rubric(self, item: Any, result: AgentResult) -> dict[str, Any]:
        try:
            _, meta = await self.reward_judge.score(self.judge_task_text(item), result.messages)
        except JudgeError as err:
            raise RolloutFailed(str(err), "judge_failed") from None
        return meta

    async def _rank_group(self, item: Any, outcomes: list[tuple[dict[str, Any], RolloutRecord]]) -> None:
        """Adds ``judge_weight`` x the ranking judge's score to each rollout's score; the verdict goes with each."""
        try:
            scores, meta = await self.reward_judge.rank(
                self.judge_task_text(item), [scored["messages"] for scored, _ in outcomes]
            )
        except JudgeError as err:
            raise RolloutFailed(str(err), "judge_failed") from None
        for index, ((scored, record), judge_score) in enumerate(zip(list(outcomes), scores, strict=True)):
            scored["scores"] += self.config.judge_weight * judge_score
            outcomes[index] = (scored, dataclasses.replace(record, score=scored["scores"]))
            scored["rollout_info"]["reward"]["score"] = scored["scores"]
            scored["rollout_info"]["judge"] = {**meta, "score": judge_score, "attempt": index + 1}

    def _make_teacher(self, config: HermesAgentEnvConfig) -> tuple[Any, Any]:
        if config.teacher_base_url is None:
            return None, None
        from hermes_env.distill import TeacherClient

        teacher = TeacherClient(
            config.teacher_base_url,
            top_k=config.teacher_top_k,
            vocab_size=len(self.tokenizer),
            max_concurrency=config.teacher_max_concurrency,
            timeout=config.teacher_timeout,
        )
        judge = None
        if config.teacher_context == "hint" and config.hint_judge_base_url is not None:
            from hermes_env.judges import JudgeChat
            from hermes_env.judges.hints import HintJudge

            chat = JudgeChat(
                config.hint_judge_base_url,
                model=config.hint_judge_model,
                max_tokens=config.hint_max_tokens,
                temperature=config.hint_temperature,
                timeout=config.teacher_timeout,
                max_concurrency=config.teacher_max_concurrency,
            )
            judge = HintJudge(chat, votes=config.hint_votes, max_next_state_chars=config.hint_max_next_state_chars)
        return teacher, judge

    def teacher_prompt_ids(self, messages: list[dict[str, Any]], group: GroupTools) -> list[int]:
        """Token ids of ``messages`` rendered up to a new assistant turn, with the rollout's tools (the
        teacher's context for a hinted turn; override to change how the teacher's context is written)."""
        from hermes_env.trajectory import render_chat

        kwargs: dict[str, Any] = dict((self.request_extra_body() or {}).get("chat_template_kwargs") or {})
        if group.schemas:
            kwargs["tools"] = group.schemas
        text = render_chat(self.tokenizer, messages, True, **kwargs)
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    async def teacher_contexts(
        self, item: Any, result: AgentResult, group: GroupTools, masks: list[int]
    ) -> tuple[list[Any], list[dict[str, Any]]]:
        """The context the teacher scores each trained run in, and the hint judge's verdicts.

        ``teacher_context: same``: every run after the student's own tokens. ``hint``: a turn the
        judge gives a hint is scored after :meth:`teacher_prompt_ids` of the conversation before it
        with the hint added; the others in the student's own context.
        """
        from hermes_env.distill import TeacherContext
        from hermes_env.env.turn_credit import turn_spans
        from hermes_env.judges.hints import hinted_messages

        spans = turn_spans(masks)
        if self.hint_judge is None:
            return [TeacherContext(s, e) for s, e in spans], []
        if len(spans) > result.turns_used:
            raise TeacherError(
                f"the sequence has {len(spans)} trained runs but the model wrote {result.turns_used} turns (are "
                "assistant messages of the prompt trained, as Phase 1 does?); hinted contexts need one run per turn"
            )
        assistant = [i for i, m in enumerate(result.messages) if m.get("role") == "assistant"]
        model_turns = assistant[len(assistant) - result.turns_used :]
        first = result.turns_used - len(spans)
        judgements = await asyncio.gather(
            *(self.hint_judge.judge(result.messages, model_turns[first + j], first + j) for j in range(len(spans)))
        )
        contexts = []
        for (start, end), judgement in zip(spans, judgements, strict=True):
            if judgement.hint is None:
                contexts.append(TeacherContext(start, end))
                continue
            before = result.messages[: model_turns[judgement.turn]]
            prefix = self.teacher_prompt_ids(hinted_messages(before, judgement.hint), group)
            contexts.append(TeacherContext(start, end, prefix, judgement.hint))
        return contexts, [j.to_json() for j in judgements]

    async def _distill(
        self, item: Any, result: AgentResult, group: GroupTools, sequence: dict[str, Any]
    ) -> tuple[list[list[int]], list[list[float]], dict[str, Any]]:
        """The rollout's distill rows and what the reader needs about them; a failure fails the rollout."""
        started = time.monotonic()
        try:
            contexts, hints = await self.teacher_contexts(item, result, group, sequence["masks"])
            judged = time.monotonic()
            arrays = await self.teacher.score(sequence["tokens"], contexts)
        except (TeacherError, JudgeError) as err:
            raise RolloutFailed(str(err), "teacher_failed") from None
        info = {
            "top_k": self.teacher.top_k,
            "context": self.config.teacher_context,
            "contexts": [c.to_json() for c in arrays.contexts],
            "hints": hints,
            "teacher_requests": arrays.requests,
            "teacher_tokens": arrays.tokens_sent,
            "teacher_seconds": round(arrays.seconds, 3),
            "hint_seconds": round(judged - started, 3),
        }
        return arrays.token_ids, arrays.logprobs, info

    async def preflight(self, *, wait_forever: bool = False) -> None:
        await super().preflight(wait_forever=wait_forever)
        if self.teacher is not None:
            await self._check_teacher()

    async def _check_teacher(self) -> None:
        """Refuse a teacher whose tokenizer is not the student's, or that does not answer prompt_logprobs."""
        from hermes_env.distill.tokenizers import tokenizer_mismatch

        name = self.config.teacher_tokenizer_name
        if name is not None:
            from hermes_env.resources import load_tokenizer

            try:
                teacher_tokenizer = load_tokenizer(name)
            except Exception as err:  # noqa: BLE001 - TokenizerUnavailable or a broken folder: one line
                raise EnvSetupError(f"cannot load the teacher's tokenizer {name!r}: {err}") from None
            mismatch = tokenizer_mismatch(self.tokenizer, teacher_tokenizer)
            if mismatch is not None:
                raise EnvSetupError(
                    f"the teacher's tokenizer {name!r} is not the student's ({mismatch}); distillation scores the "
                    "student's exact token ids, so the teacher must use the student's tokenizer"
                )
        probe = list(self.tokenizer.encode("Hello, teacher.", add_special_tokens=False))[:4]
        if len(probe) < 2:
            probe = [*probe, *probe, 0][:2]
        try:
            await self.teacher.prompt_top_k(probe, [1])
        except TeacherError as err:
            raise EnvSetupError(f"the teacher cannot be used: {err}") from None
        self.teacher.requests = self.teacher.tokens_sent = 0

    # ------------------------------------------------------------------ wandb (optional)
    async def add_rollouts_for_wandb(self, scored_data: Any, item: Any = None) -> None:
        """Readable conversations are kept by :meth:`collect_trajectories`; nothing to decode here."""

    async def create_rollout_table(self, wandb_metrics: dict[str, Any]) -> dict[str, Any]:
        if self.config.use_wandb and self.rollout_stats.readable:
            wandb_metrics["train/rollouts"] = wandb_table(self.rollout_stats.readable)
            self.rollout_stats.readable = []
        return wandb_metrics

    async def wandb_log(self, wandb_metrics: dict[str, Any] | None = None) -> None:
        metrics = dict(wandb_metrics or {})
        metrics.update(self.rollout_stats.drain_metrics())
        metrics.update(self.tool_error_log.drain_metrics())
        metrics.update(self.score_metadata_log.drain_metrics())
        metrics["train/tool_pool_max_in_flight"] = self.tool_pool.stats.max_in_flight
        metrics["train/tool_pool_timeouts"] = self.tool_pool.stats.timed_out
        metrics.update(self.rollout_stats.dropped_metrics())
        await super().wandb_log(metrics)
        # atroposlib's servers keep every request's timing and attempt count and never let go of them: the
        # server metrics of a step cover that step's requests, and memory stays flat over a long run.
        for server in getattr(self.server, "servers", ()):
            for name in _SERVER_HISTORIES:
                history = getattr(server, name, None)
                if isinstance(history, list):
                    history.clear()
        # atroposlib appends one entry per group served here and never reads or empties it.
        task_successful = getattr(self, "task_successful", None)
        if isinstance(task_successful, list):
            task_successful.clear()
