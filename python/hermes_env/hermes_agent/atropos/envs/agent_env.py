"""hermes-agent's ``atropos.envs.agent_env``: ``AgentEnv`` and ``AgentEnvConfig`` with upstream's defaults.

These subclass hermes_env's :class:`~hermes_env.agent_env.AgentEnv` / ``AgentEnvConfig`` (the same
hooks, ``AgentEnv[MyConfig]``, upstream's ``verify_and_score_trajectory`` signature and
``AgentResult`` fields) and add what upstream environment files reach for beyond the hooks:

- ``tool_pool_mode`` defaults to upstream's ``nomad``, which is not available here: the run stops at
  start naming the choices, ``--env.tool_pool_mode local|ray|container`` (the slot pool) or
  ``--env.terminal_backend bwrap|docker|local``. ``docker_direct`` is the docker backend (a container
  per trajectory, an image registered per trajectory; ``sandbox_image`` its default image).
- ``tool_server_url: inprocess`` without ``tool_server_tools`` serves the skills readers
  (:mod:`hermes_env.hermes_agent.atropos.api.tool_server`), as upstream's in-process server does offline.
- toolsets with tools that cannot run here are offered without those tools, with a warning.
- ``max_token_length`` is not a context limit of the agent loop (upstream's agent never reads it).
- ``self.tools`` (a ``ToolRegistry``), ``self._tool_executor`` (``execute(trajectory_id, call)``,
  ``release_trajectory``), ``self._backend`` (the docker-direct backend has ``register_image``),
  ``self._start_tool_backend()``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar
from urllib.parse import unquote, urlparse

from pydantic import Field, model_validator

from hermes_env.agent_env import AgentEnv as _AgentEnv
from hermes_env.agent_env import AgentEnvConfig as _AgentEnvConfig
from hermes_env.env.base_env import GroupTools
from hermes_env.errors import ConfigError, EnvSetupError
from hermes_env.hermes_agent.atropos.tools.base import ToolRegistry
from hermes_env.hermes_agent.atropos.tools.build_registry import resolve_toolsets_leniently
from hermes_env.hermes_agent.atropos.tools.tool_executor import ToolExecutor
from hermes_env.hermes_agent.sandbox_python import python_shim, shared_dir, with_python_command

__all__ = ["AgentEnv", "AgentEnvConfig", "AgentEnvConfigT", "python_shim"]


def url_path(value: str) -> str | None:
    """The existing host folder a ``file://`` URL names, else None."""
    if not value.startswith("file://"):
        return None
    path = Path(unquote(urlparse(value).path))
    return str(path) if path.is_dir() else None


def git_trust_config() -> Path:
    """A git config file trusting every repository (``safe.directory = *``), in a folder of its own."""
    path = shared_dir("git-trust") / "gitconfig"
    if not path.is_file():
        path.write_text("[safe]\n\tdirectory = *\n")
        path.chmod(0o644)
    return path


INPROCESS_TOOLS = "hermes_env.hermes_agent.atropos.api.tool_server:TOOLS"
DOCKER_DIRECT = "docker_direct"


class AgentEnvConfig(_AgentEnvConfig):
    """hermes-agent's ``AgentEnvConfig`` (see the module docstring for what differs from hermes_env's)."""

    tool_pool_mode: str = Field(
        default="nomad",
        description=(
            "Tool execution backend: nomad/modal (not available here), local/ray/container (hermes_env's slot pool), "
            "docker_direct (a container per trajectory)."
        ),
    )

    @model_validator(mode="before")
    @classmethod
    def _upstream_modes(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        if data.get("tool_pool_mode") == DOCKER_DIRECT and data.get("terminal_backend", "sandbox") == "sandbox":
            data["terminal_backend"] = "docker"
        if data.get("tool_server_url") == "inprocess" and not data.get("tool_server_tools"):
            data["tool_server_tools"] = INPROCESS_TOOLS
        return data

    def backend_options(self) -> dict[str, Any]:
        """hermes_env's, plus what upstream's sandbox image (``python:3.11-slim``) and its GitHub clones gave: a
        ``python`` command (python3), and every host folder a ``file://`` URL field names (``--env.repo_base_url
        file:///srv/repos`` in place of GitHub) visible read-only, git trusting it; on bwrap and the slot pool."""
        options = super().backend_options()
        if self.terminal_backend not in ("bwrap", "sandbox"):
            return options
        options = with_python_command(options)
        ro_paths = list(options.get("ro_paths", ()))
        env = dict(options.get("env") or {})
        local = [url_path(value) for value in self.__dict__.values() if isinstance(value, str)]
        mirrors = [p for p in local if p is not None and p not in ro_paths]
        if mirrors:
            # The sandbox user does not own the host's mirrors, and git refuses a repository owned by another
            # user unless a global config trusts it (GIT_CONFIG_* variables do not reach upload-pack).
            trust = git_trust_config()
            ro_paths += [*mirrors, str(trust.parent)]
            env.setdefault("GIT_CONFIG_GLOBAL", str(trust))
        # On the slot pool these reach its bubblewrap (container workers have no host folders to show).
        return {**options, "ro_paths": ro_paths, "env": env}

    def _check_pool_mode(self) -> None:
        """Upstream's default (nomad) must load, so ``--env.*`` flags can replace it: the environment refuses it
        when it starts (``pool_mode_problem``)."""


AgentEnvConfigT = TypeVar("AgentEnvConfigT", bound=AgentEnvConfig)


class AgentEnv(_AgentEnv[AgentEnvConfigT], Generic[AgentEnvConfigT]):
    """hermes-agent's ``AgentEnv`` (see the module docstring)."""

    env_config_cls: ClassVar[type[_AgentEnvConfig]] = AgentEnvConfig

    def __init__(
        self, config: AgentEnvConfigT, server_configs: Any, slurm: bool = False, testing: bool = False
    ) -> None:
        problem = config.pool_mode_problem()
        if problem is not None:
            raise ConfigError(problem)
        super().__init__(config, server_configs, slurm=slurm, testing=testing)
        self._tools_override: ToolRegistry | None = None
        self._tool_executor: ToolExecutor | None = ToolExecutor(self)

    @property
    def backend(self) -> Any:
        if self._backend is None:
            from hermes_env.hermes_agent.atropos.backends import create_tool_backend

            self._backend = create_tool_backend(self.config)
        return self._backend

    @property
    def tools(self) -> ToolRegistry:
        """The tools offered to the agent (``build_tools()``; an assignment replaces them)."""
        return self._tools_override if self._tools_override is not None else self.build_tools()

    @tools.setter
    def tools(self, value: ToolRegistry) -> None:
        self._tools_override = value

    def build_tools(self) -> ToolRegistry:  # type: ignore[override]
        return ToolRegistry(self.resolve_group_tools().tools)

    def resolve_group_tools(self) -> GroupTools:
        if self.config.distribution is not None:
            return super().resolve_group_tools()
        from hermes_env.tools.toolsets import tools_for_toolsets

        disabled = self.config.disabled_toolsets
        enabled = self.config.enabled_toolsets
        names = [enabled] if isinstance(enabled, str) else enabled
        disabled_names = [disabled] if isinstance(disabled, str) else disabled
        toolsets = resolve_toolsets_leniently(names, disabled_names)
        return GroupTools(toolsets=tuple(toolsets), tools=tools_for_toolsets(toolsets, disabled_names))

    def task_image(self, item: Any) -> Any:
        # Upstream items' ``image``/``dockerfile`` keys are the environment's own business: it builds and registers
        # images itself (``DockerDirectBackend.register_image``); hermes_env's per-item image convention is off.
        return None

    def loop_settings(self, item: Any) -> dict[str, Any]:
        # Upstream's agent never reads max_token_length (atroposlib's default 2048 would cut every tool-using rollout
        # as soon as the tool schemas and one result fill it): no context limit, each turn bounded by its max_tokens.
        return {**super().loop_settings(item), "max_context_tokens": None}

    async def connect_tool_server(self) -> None:
        # Upstream leaves out toolsets the server cannot complete (resolve_group_tools warns); no error here.
        if self.config.tool_server_url is None or self.tool_server is not None:
            return
        enabled, self.config.enabled_toolsets = self.config.enabled_toolsets, None
        try:
            await super().connect_tool_server()
        finally:
            self.config.enabled_toolsets = enabled

    async def preflight(self, *, wait_forever: bool = False) -> None:
        image = self.config.terminal_backend_options.get("image") if self.config.terminal_backend == "docker" else None
        if image:
            from hermes_env.containers.images import ImageCache, ImageSpec
            from hermes_env.errors import ContainerError

            try:
                await ImageCache(self.backend.engine).resolve(ImageSpec(image=image))
            except ContainerError as err:
                raise EnvSetupError(
                    f"sandbox_image {image!r} (the containers' image where a task names none) cannot be had here: "
                    f"{err}. Pass --env.sandbox_image with an image of the local store, e.g. hermes_env/base:bookworm"
                ) from None
        await super().preflight(wait_forever=wait_forever)

    async def _start_tool_backend(self) -> None:
        await self.start_tool_backend()
