"""hermes_env.hermes_agent, in process: upstream's names and semantics where they differ from hermes_env's."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from atroposlib.envs.server_handling.server_baseline import APIServerConfig
from hermes_env.backends import get_backend
from hermes_env.hermes_agent import model_tools
from hermes_env.hermes_agent.environments.agent_loop import AgentResult, HermesAgentLoop
from hermes_env.hermes_agent.environments.hermes_base_env import HermesAgentBaseEnv, HermesAgentEnvConfig
from hermes_env.hermes_agent.environments.tool_context import ToolContext
from hermes_env.hermes_agent.tools import terminal_tool
from hermes_env.testing import qwen3_tokenizer_dir
from hermes_env.testing.completions import scripted_completion as completion
from openai.types.chat import ChatCompletion


class Recorder:
    """Stands in for ServerManager.chat_completion; answers a tool call, then "Done."."""

    def __init__(self, servers: list[Any], command: str = "echo hi > hi.txt") -> None:
        self.servers = servers
        self.command = command
        self.requests: list[dict[str, Any]] = []

    async def chat_completion(self, **kwargs: Any) -> ChatCompletion:
        self.requests.append(kwargs)
        if kwargs["messages"][-1]["role"] == "user":
            return completion("", [("terminal", {"command": self.command})])
        return completion("Done.")


class UpstreamEnv(HermesAgentBaseEnv):
    name = "upstream-front"

    async def setup(self) -> None:
        pass

    async def get_next_item(self) -> dict[str, str]:
        return {"prompt": "say hi"}

    def format_prompt(self, item: dict[str, str]) -> str:
        return item["prompt"]

    async def compute_reward(self, item: Any, result: AgentResult, ctx: ToolContext) -> float:
        # hermes-agent's reward code: synchronous calls, dict results; the same sandbox is found by its task id.
        assert ToolContext(ctx.task_id) is ctx
        return 1.0 if ctx.terminal("cat hi.txt")["output"].strip() == "hi" else 0.0

    async def evaluate(self, *args: Any, **kwargs: Any) -> None:
        return None


def make_env(tmp_path: Path, **fields: Any) -> UpstreamEnv:
    config = HermesAgentEnvConfig(
        **{
            "tokenizer_name": str(qwen3_tokenizer_dir()),
            "group_size": 2,
            "use_wandb": False,
            "terminal_backend": "local",
            "terminal_backend_options": {"root": str(tmp_path / "ws")},
            **fields,
        }
    )
    server = APIServerConfig(base_url="http://127.0.0.1:9/v1", server_type="openai", api_key="", model_name="m")
    env = UpstreamEnv(config, [server])
    env.server = Recorder(env.server.servers)  # type: ignore[assignment]
    return env


def test_config_takes_upstream_combinations_without_error() -> None:
    # Upstream's defaults name a remote backend and toolsets that cannot run here: the config still builds.
    config = HermesAgentEnvConfig(
        enabled_toolsets=["terminal", "file", "web"], distribution="terminal_only", terminal_backend="modal"
    )
    assert config.distribution == "terminal_only"
    with pytest.raises(ValueError, match="unknown toolset distribution 'nope'"):
        HermesAgentEnvConfig(distribution="nope")


def test_remote_backends_are_refused_naming_docker_and_bwrap() -> None:
    for name in ("modal", "daytona", "ssh", "singularity"):
        with pytest.raises(ValueError, match=rf"'{name}'.*--env.terminal_backend docker.*--env.terminal_backend bwrap"):
            get_backend(name)


def test_get_tool_definitions_follows_upstreams_rules(caplog: pytest.LogCaptureFixture) -> None:
    names = lambda schemas: [s["function"]["name"] for s in schemas]  # noqa: E731
    with_web = names(model_tools.get_tool_definitions(enabled_toolsets=["terminal", "web"]))
    assert with_web == ["process", "terminal"]  # web left out, with one warning naming why
    assert "web_search" in caplog.text and "network" in caplog.text
    everything = names(model_tools.get_tool_definitions())
    assert {"terminal", "read_file", "write_file", "patch", "todo"} <= set(everything)
    # disabled_toolsets applies when enabled_toolsets is None (upstream ignores it otherwise).
    assert "terminal" not in names(model_tools.get_tool_definitions(disabled_toolsets=["terminal"]))
    assert "terminal" in names(model_tools.get_tool_definitions(["terminal"], disabled_toolsets=["terminal"]))


async def test_rollout_uses_max_token_length_per_turn_and_upstream_group_tools(tmp_path: Path) -> None:
    env = make_env(tmp_path, enabled_toolsets=None, max_token_length=777, max_tokens_per_turn=5)
    schemas, valid = env._resolve_tools_for_group()
    assert valid == {s["function"]["name"] for s in schemas} and "terminal" in valid and "web_search" not in valid
    assert env._use_managed_server() is False
    assert env.server.servers[0].config.api_key == "EMPTY"  # a local server without a key gets vLLM's placeholder
    group, _ = await env.collect_trajectories(await env.get_next_item())
    assert group is not None and group["scores"] == [1.0, 1.0]
    assert env._current_group_tools is not None and env._current_group_tools[1] == valid
    assert {r["max_tokens"] for r in env.server.requests} == {777}
    assert os.environ["TERMINAL_ENV"] == "local"
    await env.close()


async def test_distribution_wins_over_enabled_toolsets(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    env = make_env(tmp_path, enabled_toolsets=["todo"], distribution="terminal_only")  # terminal and file, 100% each
    assert "the distribution wins" in caplog.text
    _, valid = env._resolve_tools_for_group()
    assert {"terminal", "read_file"} <= valid and "todo" not in valid
    await env.close()


async def test_task_id_api_without_an_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Upstream's TerminalBench2 pattern: overrides, a loop and a ToolContext found by task id, cleanup_vm.
    monkeypatch.setattr(terminal_tool, "_settings", terminal_tool._Settings())
    monkeypatch.setattr(terminal_tool, "_contexts", {})
    backend = get_backend("local", root=str(tmp_path / "ws"))
    terminal_tool.use_environment(lambda: backend, timeout=10, background_timeout=60)
    dockerfile = tmp_path / "img" / "Dockerfile"
    dockerfile.parent.mkdir()
    dockerfile.write_text("FROM scratch\n")
    terminal_tool.register_task_env_overrides("t1", {"modal_image": str(dockerfile)})
    assert terminal_tool.image_override("t1").dockerfile == dockerfile
    terminal_tool.register_task_env_overrides("t2", {"docker_image": "repo/name:tag"})
    assert terminal_tool.image_override("t2").image == "repo/name:tag"
    loop = HermesAgentLoop(
        server=Recorder([]), tool_schemas=model_tools.get_tool_definitions(["terminal"]),
        valid_tool_names={"terminal"}, max_turns=3, task_id="t1", temperature=0.5, max_tokens=64,
    )  # fmt: skip
    messages = [{"role": "user", "content": "say hi"}]
    result = await loop.run(messages)
    assert result.turns_used == 2 and result.finished_naturally and messages == result.messages
    ctx = ToolContext("t1")
    assert ctx is ToolContext("t1") and ctx.terminal("cat hi.txt")["output"].strip() == "hi"
    answer = json.loads(model_tools.handle_function_call("terminal", {"command": "ls"}, task_id="t1"))
    assert "hi.txt" in answer["output"]
    terminal_tool.clear_task_env_overrides("t1")
    assert terminal_tool.image_override("t1") is None
    terminal_tool.cleanup_vm("t1")
    assert not terminal_tool.has_task_context("t1") and not list((tmp_path / "ws").glob("t1*"))
    assert ToolContext("t1") is not ctx  # a new, empty sandbox
    assert terminal_tool.cleanup_all_environments() == 1
    await backend.aclose()


def test_dotenv_of_the_environment_files_repo_root_is_loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".env").write_text("HERMES_FRONT_TEST_KEY=from-dotenv\n")
    env_file = tmp_path / "environments" / "my_env" / "my_env.py"
    env_file.parent.mkdir(parents=True)
    env_file.write_text(
        "from hermes_env.hermes_agent.environments.hermes_base_env import HermesAgentBaseEnv\n"
        "class MyEnv(HermesAgentBaseEnv):\n    pass\n"
    )
    monkeypatch.delenv("HERMES_FRONT_TEST_KEY", raising=False)
    spec = importlib.util.spec_from_file_location("my_env_for_dotenv", env_file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        assert os.environ["HERMES_FRONT_TEST_KEY"] == "from-dotenv"
    finally:
        del sys.modules[spec.name]
        os.environ.pop("HERMES_FRONT_TEST_KEY", None)


class OwnRolloutEnv(UpstreamEnv):
    """Overrides upstream's per-rollout ``collect_trajectory`` (as endless_terminals_env does)."""

    async def collect_trajectory(self, item: Any) -> tuple[dict[str, Any] | None, list[Any]]:
        import uuid

        tools, valid = self._current_group_tools  # resolved once per group before this is called
        task_id = str(uuid.uuid4())
        terminal_tool.register_task_env_overrides(task_id, {"modal_image": "some/image:tag"})
        try:
            messages = [{"role": "user", "content": self.format_prompt(item)}]
            loop = HermesAgentLoop(server=self.server, tool_schemas=tools, valid_tool_names=valid, task_id=task_id)
            result = await loop.run(messages)
            reward = await self.compute_reward(item, result, ToolContext(task_id))
            return {"tokens": [1, 2, 3], "masks": [-100, 2, 3], "scores": reward, "messages": result.messages}, []
        finally:
            terminal_tool.clear_task_env_overrides(task_id)
            terminal_tool.cleanup_vm(task_id)


async def test_a_subclass_collect_trajectory_is_called_group_size_times(tmp_path: Path) -> None:
    env = make_env(tmp_path, enabled_toolsets=["terminal"])
    env.__class__ = OwnRolloutEnv
    group, backlog = await env.collect_trajectories(await env.get_next_item())
    assert group is not None and group["scores"] == [1.0, 1.0] and len(group["tokens"]) == 2 and backlog == []
    assert terminal_tool.get_active_environments_info()["count"] == 0  # cleanup_vm removed both sandboxes
    await env.close()


def test_upstream_tool_call_parsers() -> None:
    from hermes_env.hermes_agent.environments.tool_call_parsers import get_parser

    content, calls = get_parser("hermes").parse(
        'Let me look.<tool_call>\n{"name": "terminal", "arguments": {"command": "ls"}}\n</tool_call>'
    )
    assert content == "Let me look." and calls is not None
    assert (calls[0].function.name, json.loads(calls[0].function.arguments)) == ("terminal", {"command": "ls"})
    assert get_parser("hermes").parse("no calls") == ("no calls", None)
    with pytest.raises(KeyError, match="not found"):
        get_parser("no-such-parser")


class HookEnv(UpstreamEnv):
    """Upstream's older sandbox hooks, recording what they were given."""

    calls: list[str]

    async def setup_trajectory_workspace(self, item: Any, *, trajectory_id: str, exec_tool: Any) -> dict[str, Any]:
        self.calls.append("setup")
        made = await exec_tool("bash", {"command": "echo prepared > prep.txt"}, timeout=30)
        assert made.success and made.error == "" and made.metadata == {"returncode": 0}
        return {"dir": "."}

    async def verify_and_score_trajectory(
        self, item: Any, result: AgentResult, *, trajectory_id: str, exec_tool: Any, workspace_meta: Any = None
    ) -> tuple[float, dict[str, Any]]:
        self.calls.append("verify")
        failed = await exec_tool("bash", {"command": "echo oops >&2; exit 4"})
        assert not failed.success and failed.metadata["returncode"] == 4 and "oops" in failed.output
        with pytest.raises(ValueError, match=r"args\['command'\]"):
            await exec_tool("bash", {})
        both = await exec_tool("bash", {"command": "cat prep.txt hi.txt"}, timeout=30)
        return (0.5 if both.success and workspace_meta == {"dir": "."} else 0.0), {"checked": 1}

    async def compute_reward(self, item: Any, result: AgentResult, ctx: ToolContext) -> float:
        self.calls.append("compute_reward")
        return await super().compute_reward(item, result, ctx)


@pytest.mark.parametrize(
    ("mode", "calls", "score"), [("default", ["compute_reward"], 1.0), ("nomad", ["setup", "verify"], 0.5)]
)
async def test_tool_pool_mode_chooses_compute_reward_or_the_sandbox_hooks(
    tmp_path: Path, mode: str, calls: list[str], score: float
) -> None:
    config = HermesAgentEnvConfig(
        tokenizer_name=str(qwen3_tokenizer_dir()), group_size=1, use_wandb=False, terminal_backend="local",
        terminal_backend_options={"root": str(tmp_path / "ws")}, tool_pool_mode=mode,
    )  # fmt: skip
    server = APIServerConfig(base_url="http://127.0.0.1:9/v1", server_type="openai", api_key="", model_name="m")
    env = HookEnv(config, [server])
    env.server = Recorder(env.server.servers)  # type: ignore[assignment]
    env.calls = []
    group, _ = await env.collect_trajectories(await env.get_next_item())
    assert env.calls == calls
    assert group is not None and group["scores"] == [score]
    await env.close()


async def test_default_sandbox_hooks_score_with_compute_reward(tmp_path: Path) -> None:
    # Upstream's default verify_and_score_trajectory: compute_reward with ToolContext(trajectory_id), the same sandbox.
    env = make_env(tmp_path, group_size=1, tool_pool_mode="modal")
    group, _ = await env.collect_trajectories(await env.get_next_item())
    assert group is not None and group["scores"] == [1.0]
    await env.close()


async def test_a_failed_loop_is_logged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    class Broken(Recorder):
        async def chat_completion(self, **kwargs: Any) -> ChatCompletion:
            raise RuntimeError("the template cannot render this")

    monkeypatch.setattr(terminal_tool, "_settings", terminal_tool._Settings())
    monkeypatch.setattr(terminal_tool, "_contexts", {})
    backend = get_backend("local", root=str(tmp_path / "ws"))
    terminal_tool.use_environment(lambda: backend, timeout=10, background_timeout=60)
    loop = HermesAgentLoop(server=Broken([]), tool_schemas=[], valid_tool_names=set(), task_id="t9")
    result = await loop.run([{"role": "user", "content": "hi"}])
    assert result.turns_used == 0 and result.failure is not None
    assert "agent loop of task t9 failed after 0 turns" in caplog.text
    assert "the template cannot render this" in caplog.text
    terminal_tool.cleanup_all_environments()
    await backend.aclose()
