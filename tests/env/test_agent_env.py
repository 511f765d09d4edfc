"""hermes-agent's AgentEnv (its atropos/ integration) on hermes_env: config fields, hooks, signatures, results."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from atroposlib.envs.server_handling.server_baseline import APIServerConfig
from env_fixtures import FakeChat, completion
from hermes_env import AgentEnv, AgentEnvConfig
from hermes_env.agent_env import ToolCall
from hermes_env.testing import qwen3_tokenizer_dir
from pydantic import ValidationError

from tests.slot_pool.conftest import BWRAP_PROBLEM


def test_agent_env_fields_map_onto_the_pool_and_loop() -> None:
    config = AgentEnvConfig(agent_max_steps=7, agent_max_tokens=256, slots_per_container=3, max_containers=2)
    assert (config.max_agent_turns, config.max_tokens_per_turn, config.agent_temperature) == (7, 256, 0.7)
    assert config.enabled_toolsets == ["default"] and config.terminal_backend == "sandbox"
    options = config.pool_options()
    assert (options["slots_per_worker"], options["min_workers"], options["max_workers"]) == (3, 1, 2)
    assert (options["launcher"], options["batch_window_ms"], options["max_batch_size"]) == ("local", 20.0, 200)
    assert AgentEnvConfig(max_agent_turns=4).max_agent_turns == 4  # the hermes_env name wins when given


def test_nomad_and_modal_are_refused_and_their_fields_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(
        ValidationError, match="tool_pool_mode 'nomad' .* not available in hermes_env; pass --env.tool_pool_mode"
    ):
        AgentEnvConfig(tool_pool_mode="nomad")
    with pytest.raises(ValidationError, match="min_containers \\(5\\) is larger than max_containers \\(2\\)"):
        AgentEnvConfig(min_containers=5, max_containers=2)
    with caplog.at_level(logging.WARNING):
        AgentEnvConfig(nomad_address="http://nomad:4646", modal_gpu="A100")
    assert "modal_gpu, nomad_address configure hermes-agent's Nomad/Modal pools" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        AgentEnvConfig(**AgentEnvConfig().model_dump())  # atroposlib's CLI passes every default explicitly
    assert "Nomad/Modal" not in caplog.text


def test_rollouts_run_on_the_pool_or_on_a_backend_named_by_terminal_backend() -> None:
    bwrap = AgentEnvConfig(terminal_backend="bwrap", tool_pool_mode="nomad")  # the pool fields no longer matter
    assert bwrap.backend_options() == {"allow_network": True}
    docker = AgentEnvConfig(terminal_backend="docker", sandbox_image="tools:1", allow_network=False)
    assert docker.backend_options() == {"allow_network": False, "image": "tools:1"}
    assert AgentEnvConfig(
        terminal_backend="local", terminal_backend_options={"shell": "/bin/sh"}
    ).backend_options() == {"shell": "/bin/sh"}
    assert AgentEnvConfig().backend_options()["launcher"] == "local"  # sandbox: the slot pool
    with pytest.raises(ValidationError, match="unknown terminal_backend 'modal' for AgentEnv; use one of sandbox"):
        AgentEnvConfig(terminal_backend="modal")


def test_tool_pool_mode_names_one_of_the_pools_launchers() -> None:
    from hermes_env.slot_pool.config import LAUNCHERS

    assert set(LAUNCHERS) == {"local", "ray", "container"}
    for mode in LAUNCHERS:
        assert AgentEnvConfig(tool_pool_mode=mode).pool_options()["launcher"] == mode
    with pytest.raises(ValidationError, match="unknown tool_pool_mode 'k8s'; use one of local, ray, container \\(the"):
        AgentEnvConfig(tool_pool_mode="k8s")


def test_sandbox_image_is_the_container_workers_image(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        options = AgentEnvConfig(tool_pool_mode="container", sandbox_image="tools:1").pool_options()
    assert options["container_image"] == "tools:1" and "Nomad/Modal" not in caplog.text
    assert "container_image" not in AgentEnvConfig(tool_pool_mode="container").pool_options()  # the base image
    explicit = {"container_image": "mine:2"}
    config = AgentEnvConfig(tool_pool_mode="container", sandbox_image="tools:1", terminal_backend_options=explicit)
    assert config.pool_options()["container_image"] == "mine:2"
    with caplog.at_level(logging.WARNING):
        local = AgentEnvConfig(tool_pool_mode="local", sandbox_image="tools:1").pool_options()
    assert "container_image" not in local and "sandbox_image configure hermes-agent's Nomad/Modal" in caplog.text


class WordEnv(AgentEnv):
    name = "word"
    calls: list[tuple[str, Any]]

    async def setup_agent_env(self) -> None:
        self.calls = [("setup_agent_env", None)]

    async def get_next_item(self) -> dict[str, Any]:
        return {"id": "t1", "word": "alpha"}

    def build_task(self, item: dict[str, Any]) -> str:
        return f"Write the word {item['word']} to word.txt"

    async def setup_trajectory_workspace(self, item: Any, *, trajectory_id: str, exec_tool: Any) -> dict[str, Any]:
        result = await exec_tool(ToolCall(name="write_file", arguments={"path": "setup.txt", "content": "s"}))
        self.calls.append(("setup_trajectory_workspace", trajectory_id))
        return {"prepared": result.success}

    async def verify_and_score_trajectory(
        self,
        item: Any,
        final_response: str,
        *,
        trajectory_id: str,
        exec_tool: Any,
        agent_result: Any = None,
        workspace_meta: dict[str, Any] | None = None,
    ) -> tuple[float, dict[str, Any]]:
        check = await exec_tool(ToolCall(name="bash", arguments={"command": "cat word.txt"}))
        self.calls.append(("verify", (final_response, workspace_meta, agent_result.total_tool_calls)))
        return (1.0 if check.output == item["word"] else 0.0), {"seen": check.output, **(workspace_meta or {})}

    async def score_trajectory(self, item: Any, final_response: str) -> float:
        raise AssertionError("verify_and_score_trajectory is overridden")


def policy(messages: list[dict[str, Any]], call: int) -> Any:
    if messages[-1]["role"] == "user":
        word = "alpha" if call % 2 else "beta"
        return completion(None, [("terminal", {"command": f"printf {word} > word.txt"})])
    return completion("Wrote it.")


@pytest.mark.parametrize(
    "mode",
    [
        pytest.param("local", marks=pytest.mark.skipif(BWRAP_PROBLEM is not None, reason=f"no bwrap: {BWRAP_PROBLEM}")),
        pytest.param("container", marks=pytest.mark.containers),  # the workers are containers of the base image
    ],
)
async def test_a_group_through_the_agent_env_hooks(ws_root: Path, mode: str) -> None:
    config = AgentEnvConfig(
        tool_pool_mode=mode,
        tokenizer_name=str(qwen3_tokenizer_dir()),
        group_size=2,
        use_wandb=False,
        include_messages=True,
        slots_per_container=2,
        max_containers=1,
        agent_max_steps=3,
        terminal_backend_options={"root_dir": str(ws_root)},
    )
    server = APIServerConfig(base_url="http://127.0.0.1:9/v1", server_type="openai", api_key="x", model_name="m")
    env = WordEnv(config, [server])
    env.server = FakeChat(env.server.servers, policy)  # type: ignore[assignment]
    try:
        await env.setup()
        group, _ = await env.collect_trajectories(await env.get_next_item())
        assert group is not None and sorted(group["scores"]) == [0.0, 1.0]
        meta = [o["score_metadata"] for o in group["overrides"]]
        assert sorted(m["seen"] for m in meta) == ["alpha", "beta"] and all(m["prepared"] for m in meta)
        verifies = [args for name, args in env.calls if name == "verify"]
        assert verifies and all(v == ("Wrote it.", {"prepared": True}, 1) for v in verifies)
        assert env.calls[0] == ("setup_agent_env", None)
        # AgentEnv's default toolset: terminal (+ process) and the file read/write tools.
        offered = {t["function"]["name"] for t in env.server.requests[0]["tools"]}
        assert offered == {"terminal", "process", "read_file", "write_file"}
        assert env.server.requests[0]["temperature"] == 0.7
        final, debug = await env.run_agent("Say done.")
        assert final == "Wrote it." and debug == {"success": True, "error": None, "tool_calls": 1}
    finally:
        await env.shutdown_tool_backend()
