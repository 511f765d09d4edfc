"""hermes-agent's ``environments.hermes_base_env``: ``HermesAgentBaseEnv`` and ``HermesAgentEnvConfig`` with
upstream's semantics, on hermes_env's environment (:class:`hermes_env.env.base_env.HermesAgentBaseEnv`).

Where upstream and hermes_env differ, this front does as upstream does:

- ``max_token_length`` is each model call's ``max_tokens`` (no context limit is applied);
- ``.env`` files are loaded (python-dotenv, existing variables win): the working directory's, and that of the
  environment file's repository root (the folder above its ``environments/`` folder, as upstream computes it);
- ``enabled_toolsets=None`` offers every toolset; ``distribution`` wins over ``enabled_toolsets``; tools that
  cannot run here (web, browser, vision, ... without a tool server) are left out with one warning at start,
  as upstream's requirement checks leave them out, never a configuration error;
- ``_resolve_tools_for_group()`` returns ``(tool_schemas, valid_tool_names)``, ``_use_managed_server()`` says
  whether Phase 2 runs, ``_current_group_tools``, ``_tool_error_buffer`` and
  ``_format_trajectory_for_display`` exist; a subclass that overrides upstream's per-rollout
  ``collect_trajectory(item)`` has it called ``group_size`` times per group, as atroposlib does;
- ``TERMINAL_ENV``, ``TERMINAL_TIMEOUT`` and ``TERMINAL_LIFETIME_SECONDS`` are set from the configuration, and
  ``ToolContext(task_id)`` / ``HermesAgentLoop(task_id=...)`` / ``cleanup_vm(task_id)`` reach the sandboxes of
  this environment's backend.

- ``tool_pool_mode`` (default ``default``) chooses the scoring path, as in upstream's base with that field:
  ``default`` scores with ``compute_reward(item, result, ctx)`` and never calls the sandbox hooks; any other
  mode (upstream's ``nomad``/``modal`` slot pools) calls ``setup_trajectory_workspace(item, trajectory_id=,
  exec_tool=)`` before the first turn and ``verify_and_score_trajectory(item, result, trajectory_id=,
  exec_tool=, workspace_meta=)`` after the last, in the rollout's own sandbox on ``terminal_backend``;
  ``await exec_tool(tool_name, {"command": ...}, timeout=300)`` runs the command there and answers with
  ``.success``, ``.output``, ``.error`` and ``.metadata["returncode"]`` (:class:`ExecResult`);
- bwrap sandboxes have a ``python`` command (python3), as upstream's sandbox images do.

What this machine lacks is a command-line choice: ``terminal_backend`` modal/daytona/ssh/singularity stops the
run at start naming ``--env.terminal_backend docker|bwrap``; a Hub dataset is replaced by
``--env.dataset_name PATH`` (a local folder in the same layout, or a .jsonl/.parquet file).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
import logging
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from atroposlib.envs.base import BaseEnv, ScoredDataGroup
from dotenv import load_dotenv
from pydantic import Field, model_validator

from hermes_env.env.base_env import GroupTools
from hermes_env.env.base_env import HermesAgentBaseEnv as _HermesEnv
from hermes_env.env.config import HermesAgentEnvConfig as _HermesConfig
from hermes_env.env.config import is_local_dataset
from hermes_env.env.stats import RolloutRecord
from hermes_env.hermes_agent import model_tools
from hermes_env.hermes_agent.environments import agent_loop
from hermes_env.hermes_agent.environments.agent_loop import AgentResult, HermesAgentLoop
from hermes_env.hermes_agent.environments.tool_context import ToolContext
from hermes_env.hermes_agent.sandbox_python import with_python_command
from hermes_env.hermes_agent.tools import terminal_tool
from hermes_env.hermes_agent.toolset_distributions import sample_toolsets_from_distribution
from hermes_env.tools import REGISTRY
from hermes_env.tools.distributions import validate_distribution

logger = logging.getLogger(__name__)

DEFAULT_POOL_MODE = "default"


@dataclasses.dataclass
class ExecResult:
    """What upstream's sandbox hooks get from ``await exec_tool(...)``."""

    success: bool
    output: str = ""
    error: str = ""
    metadata: dict[str, Any] = dataclasses.field(default_factory=dict)


def hook_exec_tool(ctx: Any) -> Any:
    """Upstream's ``exec_tool(tool_name, args, timeout=300)`` for the sandbox hooks, on a rollout's ToolContext.

    As upstream's, every call runs ``args["command"]`` in the rollout's terminal, whatever ``tool_name`` says
    (``bash`` in upstream's files); ``success`` is exit code 0, ``error`` is set only on failure.
    """

    async def exec_tool(tool_name: str, args: dict[str, Any], timeout: float = 300) -> ExecResult:
        command = args.get("command")
        if not isinstance(command, str) or not command:
            raise ValueError(
                f"exec_tool({tool_name!r}, {args!r}) needs args['command'], the shell command to run in the sandbox"
            )
        answer = await ctx.terminal(command, timeout=float(timeout))
        code = answer.get("exit_code", 1)
        failed = code != 0 or getattr(answer, "timed_out", False)
        return ExecResult(
            success=not failed,
            output=str(answer.get("output") or ""),
            error=str(answer.get("error") or "") if failed else "",
            metadata={"returncode": code},
        )

    return exec_tool


def load_env_file(path: Path) -> bool:
    """Load one ``.env`` file if it exists (variables already set win, as with python-dotenv's default)."""
    if path.is_file():
        load_dotenv(dotenv_path=path, override=False)
        return True
    return False


def repo_root_of(file: str | os.PathLike[str]) -> Path | None:
    """The folder above the nearest ``environments`` folder holding ``file`` (upstream's repository root)."""
    for parent in Path(file).resolve().parents:
        if parent.name == "environments":
            return parent.parent
    return None


load_env_file(Path.cwd() / ".env")

_LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]", "0.0.0.0")


def _key_local_servers(server_configs: Any) -> None:
    """Give a server on this machine with no API key vLLM's placeholder key ``EMPTY``.

    Upstream's configs read the key from the environment (``os.getenv("OPENROUTER_API_KEY", "")``); pointed at a
    local server with ``--openai.base_url``, an empty key would stop the OpenAI client before any request.
    A remote server keeps its empty key, and the client's own error says what is missing.
    """
    from urllib.parse import urlparse

    for server in server_configs if isinstance(server_configs, list) else []:
        url = getattr(server, "base_url", None)
        if url and not getattr(server, "api_key", None) and urlparse(url).hostname in _LOOPBACK_HOSTS + ("::1",):
            server.api_key = "EMPTY"


def _record_of(score: float, masks: list[int], messages: list[dict[str, Any]]) -> RolloutRecord:
    """A statistics record for a rollout a subclass's own ``collect_trajectory`` made (from its messages)."""
    assistant = [m for m in messages if m.get("role") == "assistant"]
    last = assistant[-1] if assistant else {}
    return RolloutRecord(
        score=float(score),
        turns=len(assistant),
        tool_calls=sum(len(m.get("tool_calls") or []) for m in assistant),
        tool_error_kinds=(),
        trained_tokens=sum(1 for m in masks if m != -100),
        total_tokens=len(masks),
        finished_naturally=bool(assistant) and not last.get("tool_calls"),
        budget_exhausted=False,
        reward_failed=False,
        end_reason="stop" if assistant and not last.get("tool_calls") else "turn_limit",
    )


class Phase2ChatServer:
    """The environment's ``self.server`` in Phase 2: the ServerManager, whose ``chat_completion`` goes through
    hermes_env's managed server.

    Upstream environment files call ``self.server.chat_completion(...)`` themselves (an ``evaluate`` that asks
    one question, TerminalBench2's agent loop). With ``--openai.server_type vllm`` that server speaks only
    ``/generate``: each such call is rendered with the chat template, sampled there and parsed back (tool calls
    included) by a managed server of its own. Everything else is the ServerManager's.
    """

    def __init__(self, env: HermesAgentBaseEnv, server: Any) -> None:
        self._env = env
        self._server = server

    def __getattr__(self, name: str) -> Any:
        return getattr(self._server, name)

    @contextlib.asynccontextmanager
    async def managed_server(
        self, tokenizer: Any = None, tool_call_parser: Any = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        """``async with self.server.managed_server(tokenizer=..., tool_call_parser=...) as managed:`` as upstream
        files write it: hermes_env's managed server (``managed.get_state()["nodes"]`` as atroposlib's)."""
        from hermes_env.hermes_agent.environments.tool_call_parsers import parser_name
        from hermes_env.managed import managed_server

        env = self._env
        parser = parser_name(tool_call_parser) or env.tool_call_parser
        async with managed_server(
            self._server, tokenizer or env.tokenizer, tool_parser=parser, divergence_policy=env.config.divergence_policy
        ) as managed:
            yield managed

    async def chat_completion(self, **kwargs: Any) -> Any:
        from hermes_env.managed import managed_server

        env = self._env
        policy = env.config.divergence_policy
        async with managed_server(
            self._server, env.tokenizer, tool_parser=env.tool_call_parser, divergence_policy=policy
        ) as managed:
            return await managed.chat_completion(**kwargs)


class HermesAgentEnvConfig(_HermesConfig):
    """hermes_env's configuration, checked the way upstream reads it (see the module doc)."""

    tool_call_parser: str | None = Field(
        default="hermes",
        description="Parser of the model's tool calls in Phase 2 (upstream's default: hermes); None detects it "
        "from the tokenizer's chat template.",
    )

    tool_pool_mode: str = Field(
        default=DEFAULT_POOL_MODE,
        description="'default' scores with compute_reward; any other mode (upstream's 'nomad', 'modal') calls "
        "setup_trajectory_workspace and verify_and_score_trajectory in the rollout's sandbox on terminal_backend.",
    )

    def backend_options(self) -> dict[str, Any]:
        """``terminal_backend_options``, and on bwrap a ``python`` command as upstream's sandbox images have."""
        options = dict(self.terminal_backend_options)
        return with_python_command(options) if self.terminal_backend == "bwrap" else options

    @model_validator(mode="after")
    def _check_tools_and_data(self) -> HermesAgentEnvConfig:
        # Replaces hermes_env's check of the same name: no toolset combination is a configuration error here.
        if self.distribution is not None and not validate_distribution(self.distribution):
            from hermes_env.tools.distributions import DISTRIBUTIONS

            raise ValueError(
                f"unknown toolset distribution {self.distribution!r}; valid distributions: {', '.join(DISTRIBUTIONS)}"
            )
        if self.tool_call_parser is not None:
            from hermes_env.parsers import list_parsers

            known = list_parsers()
            if self.tool_call_parser not in known:
                raise ValueError(
                    f"unknown tool_call_parser {self.tool_call_parser!r}; available parsers: {', '.join(known)} "
                    "(leave it unset to detect the parser from the tokenizer)"
                )
        if self.dataset_name is not None and is_local_dataset(self.dataset_name):
            path = Path(self.dataset_name).expanduser()
            if not path.exists():
                raise ValueError(
                    f"dataset {self.dataset_name!r} not found (resolved to {path.resolve()}); pass "
                    "--env.dataset_name with an existing folder of data files, a .jsonl/.parquet file, or a "
                    "Hugging Face dataset name"
                )
        return self


class HermesAgentBaseEnv(_HermesEnv):
    """Upstream's base environment; subclasses implement ``setup``, ``get_next_item``, ``format_prompt``,
    ``compute_reward`` and ``evaluate`` as for hermes-agent."""

    name: str | None = "hermes-agent"
    env_config_cls = HermesAgentEnvConfig

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # Upstream loads <repo root>/.env when its base module is imported, before config_init reads the keys.
        module = sys.modules.get(cls.__module__)
        file = getattr(module, "__file__", None)
        root = repo_root_of(file) if file else None
        if root is not None:
            load_env_file(root / ".env")
        if file:
            load_env_file(Path(file).resolve().parent / ".env")

    def __init__(self, config: HermesAgentEnvConfig, server_configs: Any, slurm: bool = False, testing: bool = False):
        _key_local_servers(server_configs)
        super().__init__(config, server_configs, slurm=slurm, testing=testing)
        # Upstream's tools read these; environment files may too.
        os.environ["TERMINAL_ENV"] = config.terminal_backend
        os.environ["TERMINAL_TIMEOUT"] = str(int(config.terminal_timeout))
        os.environ["TERMINAL_LIFETIME_SECONDS"] = str(int(config.terminal_lifetime))
        if self.phase == "managed":
            self.server = Phase2ChatServer(self, self.server)
        self._current_group_tools: tuple[list[dict[str, Any]], set[str]] | None = None
        self._tool_error_buffer: list[dict[str, Any]] = []
        terminal_tool.use_environment(
            lambda: self.backend, timeout=config.terminal_timeout, background_timeout=config.rollout_timeout
        )
        agent_loop.use_environment(self)
        self._warn_about_toolsets()
        if self._uses_sandbox_hooks():
            logger.info(
                "tool_pool_mode %r: setup_trajectory_workspace and verify_and_score_trajectory run in each rollout's "
                "own sandbox on terminal_backend %r (no slot pool here)",
                config.tool_pool_mode,
                config.terminal_backend,
            )

    # ------------------------------------------------------------------ toolsets, upstream's way
    def _warn_about_toolsets(self) -> None:
        config = self.config
        if config.distribution is not None and config.enabled_toolsets is not None:
            logger.warning(
                "both distribution %r and enabled_toolsets %s are set: the distribution wins (as in hermes-agent)",
                config.distribution,
                config.enabled_toolsets,
            )
        if config.distribution is None:
            # Names the tools left out (and why) once, now rather than at the first group.
            model_tools.available_tool_names(
                model_tools.tool_names_for(config.enabled_toolsets, config.disabled_toolsets)
            )

    def resolve_group_tools(self) -> GroupTools:
        """The next group's tools: a draw of ``distribution`` (it wins), else ``enabled_toolsets`` (None: all);
        ``disabled_toolsets`` subtracted; tools that cannot run here left out."""
        config = self.config
        if config.distribution is not None:
            toolsets: list[str] | None = sample_toolsets_from_distribution(config.distribution, self._rng)
            names = model_tools.tool_names_for(toolsets, None)
            names -= model_tools.tool_names_for(None, None) - model_tools.tool_names_for(None, config.disabled_toolsets)
        else:
            toolsets = config.enabled_toolsets
            names = model_tools.tool_names_for(toolsets, config.disabled_toolsets)
            if toolsets and config.disabled_toolsets:
                names -= model_tools.tool_names_for(config.disabled_toolsets, None)
        tools = [REGISTRY.get(name) for name in model_tools.available_tool_names(names)]
        group = GroupTools(toolsets=tuple(toolsets or ("all",)), tools=tools)
        self._current_group_tools = (group.schemas, {tool.name for tool in tools})
        return group

    def _resolve_tools_for_group(self) -> tuple[list[dict[str, Any]], set[str]]:
        """Upstream's ``(tool_schemas, valid_tool_names)`` for a group."""
        group = self.resolve_group_tools()
        return group.schemas, {tool.name for tool in group.tools}

    def _use_managed_server(self) -> bool:
        """Whether rollouts run in Phase 2 (hermes_env's managed server over ``/generate``)."""
        return self.phase == "managed"

    @property
    def backend(self) -> Any:
        """hermes_env's backend, with the configuration's ``backend_options()``."""
        if self._backend is None:
            from hermes_env.backends import get_backend

            self._backend = get_backend(self.config.terminal_backend, **self.config.backend_options())
        return self._backend

    # ------------------------------------------------------------------ sandbox hooks, upstream's way
    def _uses_sandbox_hooks(self) -> bool:
        return self.config.tool_pool_mode != DEFAULT_POOL_MODE

    async def setup_trajectory_workspace(self, item: Any, *, trajectory_id: str, exec_tool: Any) -> dict[str, Any]:
        """Upstream's hook (called when ``tool_pool_mode`` is not ``default``): prepare the sandbox; default
        nothing. The dict returned is ``verify_and_score_trajectory``'s ``workspace_meta``."""
        return {}

    async def verify_and_score_trajectory(  # type: ignore[override]
        self,
        item: Any,
        result: AgentResult,
        *,
        trajectory_id: str,
        exec_tool: Any,
        workspace_meta: dict[str, Any] | None = None,
    ) -> tuple[float, dict[str, Any]]:
        """Upstream's hook (called when ``tool_pool_mode`` is not ``default``): ``(reward, metadata)``; default
        ``compute_reward`` with the trajectory's ToolContext."""
        reward = self.compute_reward(item, result, ToolContext(trajectory_id))
        return (await reward if inspect.isawaitable(reward) else reward), {}

    async def prepare_workspace(self, item: Any, trajectory_id: str, ctx: Any) -> dict[str, Any] | None:
        if not self._uses_sandbox_hooks():
            return None
        return await self.setup_trajectory_workspace(item, trajectory_id=trajectory_id, exec_tool=hook_exec_tool(ctx))

    async def score_rollout(
        self, item: Any, result: AgentResult, ctx: Any, *, trajectory_id: str, workspace_meta: dict[str, Any]
    ) -> float | tuple[float, dict[str, Any]]:
        if not self._uses_sandbox_hooks():
            reward = self.compute_reward(item, result, ctx)
            return await reward if inspect.isawaitable(reward) else reward
        return await self.verify_and_score_trajectory(
            item, result, trajectory_id=trajectory_id, exec_tool=hook_exec_tool(ctx), workspace_meta=workspace_meta
        )

    # ------------------------------------------------------------------ rollouts
    def loop_settings(self, item: Any) -> dict[str, Any]:
        """Upstream passes ``max_token_length`` as each turn's ``max_tokens`` and sets no context limit."""
        limit = self.config.max_token_length
        return {
            "max_tokens": limit if limit and limit > 0 else self.config.max_tokens_per_turn,
            "max_context_tokens": None,
        }

    def make_tool_context(self, trajectory_id: str) -> Any:
        ctx = super().make_tool_context(trajectory_id)
        terminal_tool.apply_image_override(self.backend, trajectory_id, ctx)
        terminal_tool.adopt_context(trajectory_id, ctx)  # ToolContext(task_id) finds it
        return ctx

    def _collect_trajectory_overridden(self) -> bool:
        return type(self).collect_trajectory is not HermesAgentBaseEnv.collect_trajectory

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        """hermes_env's groups; with a subclass's own ``collect_trajectory``, that method ``group_size`` times."""
        if not self._collect_trajectory_overridden():
            return await super().collect_trajectories(item)
        self._current_group_tools = self._resolve_tools_for_group()
        results = await asyncio.gather(*(self.collect_trajectory(item) for _ in range(self.config.group_size)))
        kept = [(scored, backlog) for scored, backlog in results if scored]
        if not kept:
            return None, []
        group = ScoredDataGroup(tokens=[], masks=[], scores=[], messages=[])
        backlog_all: list[Any] = []
        for scored, backlog in kept:
            many = isinstance(scored.get("scores"), list)  # a whole group (several sequences) from one rollout
            for key in ("tokens", "masks", "scores", "messages", "inference_logprobs"):
                if key in scored and scored[key] is not None:
                    values = scored[key] if many else [scored[key]]
                    group.setdefault(key, []).extend(values)  # type: ignore[misc]
            backlog_all.extend(backlog or [])
        # The run's statistics (summary table, wandb) count these rollouts too, from what they returned.
        messages = group.get("messages") or []
        self.rollout_stats.add_group(
            [
                _record_of(score, group["masks"][i], messages[i] if i < len(messages) else [])
                for i, score in enumerate(group["scores"])
            ]
        )
        return group, backlog_all

    async def collect_trajectory(self, item: Any) -> tuple[dict[str, Any] | None, list[Any]]:
        """Upstream's one rollout: agent loop in a sandbox of its own, reward, cleanup; ``(scored item, [])``."""
        group = self.resolve_group_tools()
        scored, _record = await self.rollout(item, group, 0)
        return scored, []

    async def close(self) -> None:
        """hermes_env's close; the task-id registry and loops stop using this environment's backend."""
        try:
            await terminal_tool.cleanup_all_environments_async()  # sandboxes made for task ids this env chose
            await super().close()
        finally:
            terminal_tool.release_environment()
            agent_loop.release_environment(self)

    async def evaluate_log(self, metrics: dict[str, Any], *args: Any, **kwargs: Any) -> None:
        """atroposlib's ``evaluate_log``; the metrics are also what ``evaluate`` prints at the end."""
        self.last_eval_metrics = dict(metrics)
        await super().evaluate_log(metrics, *args, **kwargs)

    # ------------------------------------------------------------------ display
    @staticmethod
    def _format_trajectory_for_display(messages: list[dict[str, Any]]) -> str:
        """A conversation as readable text: roles in brackets, tool calls and results shown, long parts cut."""

        def cut(text: str, limit: int) -> str:
            return text if len(text) <= limit else text[:limit] + "..."

        parts: list[str] = []
        for message in messages:
            role = message.get("role", "unknown")
            content = message.get("content") or ""
            if not isinstance(content, str):
                content = str(content)
            if role in ("system", "user"):
                parts.append(f"[{role.upper()}]\n{content}")
            elif role == "assistant":
                reasoning = message.get("reasoning_content") or ""
                if reasoning:
                    parts.append(f"[ASSISTANT thinking]\n{cut(reasoning, 300)}")
                if content:
                    parts.append(f"[ASSISTANT]\n{content}")
                for call in message.get("tool_calls") or []:
                    function = call.get("function", {})
                    arguments = cut(str(function.get("arguments", "{}")), 200)
                    parts.append(f"[TOOL CALL] {function.get('name', '?')}({arguments})")
            elif role == "tool":
                parts.append(f"[TOOL RESULT] {cut(content, 500)}")
        return "\n\n".join(parts)


__all__ = [
    "AgentResult",
    "ExecResult",
    "BaseEnv",
    "HermesAgentBaseEnv",
    "HermesAgentEnvConfig",
    "HermesAgentLoop",
    "ToolContext",
]
