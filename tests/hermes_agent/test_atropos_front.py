"""Environments written as hermes-agent's atropos/ integration writes them, ported with ``python -m hermes_env.port``
and run as users run them (``process`` in Phase 1 and Phase 2, ``evaluate``), plus the front's pieces one by one.

The environment files are ours (``upstream_style/atropos/envs/``), in upstream's package layout: relative imports
(``from ..agent import ...``, ``from .agent_env import AgentEnv, AgentEnvConfig``), ``AgentEnv[Config]``, upstream's
``verify_and_score_trajectory`` signatures (with and without ``agent_result``/``workspace_meta``), reward code reading
``agent_result.steps`` / ``tool_results`` / ``trajectory_data``, and ``AtroposAgent`` + ``self._tool_executor``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hermes_env.agent.steps import AgentToolCall as ToolCall
from hermes_env.agent.steps import steps_from_messages, tool_result_from_text
from hermes_env.testing import qwen3_tokenizer_dir
from hermes_env.testing.scripted_openai import ScriptedOpenAIServer
from hermes_env.testing.scripted_vllm import ScriptedRequest, ScriptedVLLMServer

from tests.slot_pool.conftest import BWRAP_PROBLEM

REPO = Path(__file__).resolve().parents[2]
UPSTREAM_STYLE = Path(__file__).parent / "upstream_style" / "atropos" / "envs"
needs_bwrap = pytest.mark.skipif(BWRAP_PROBLEM is not None, reason=f"no bwrap: {BWRAP_PROBLEM}")


def _call(name: str, arguments: dict[str, Any]) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def _answer(task: str, turn: int) -> str:
    """What a correct agent says on ``turn`` (0-based) of the task: the fixture environments' reference moves."""
    if word := re.search(r"Write the word (\w+)", task):
        return _call("write_file", {"path": "word.txt", "content": word[1] + "\n"}) if turn == 0 else word[1]
    if n := re.search(r"What is (\d+) \+", task):
        return str(2 * int(n[1]))
    return "I cannot help with that."


def _openai_responder(messages: list[dict[str, Any]], tools: Any) -> str:
    task = next(m["content"] for m in messages if m["role"] == "user")
    return _answer(task, sum(m["role"] == "assistant" for m in messages))


def _vllm_responder(request: ScriptedRequest) -> str:
    text = request.prompt_text
    task = text.split("<|im_start|>user\n", 1)[1].split("<|im_end|>", 1)[0]
    return _answer(task, text.count("<|im_start|>assistant") - 1)


def _port(name: str, out_dir: Path) -> Path:
    """``python -m hermes_env.port`` on one fixture file (it must rewrite only imports and map them all)."""
    out = out_dir / f"{name}.py"
    proc = subprocess.run(
        [sys.executable, "-m", "hermes_env.port", str(UPSTREAM_STYLE / f"{name}.py"), "-o", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "hermes_env.hermes_agent.atropos.envs.agent_env" in out.read_text()
    return out


def _run(env_file: Path, command: str, base_url: str, phase: int, *flags: str) -> subprocess.CompletedProcess[str]:
    tokenizer = str(qwen3_tokenizer_dir())
    server = (
        ["--openai.server_type", "openai", "--openai.model_name", "scripted-policy"]
        if phase == 1
        else ["--openai.server_type", "vllm", "--openai.model_name", "scripted", "--openai.tokenizer_name", tokenizer]
    )
    cmd = [sys.executable, str(env_file), command, "--openai.base_url", base_url, "--openai.api_key", "x", *server,
           "--env.tokenizer_name", tokenizer, "--env.use_wandb", "false", *flags]  # fmt: skip
    env = {**os.environ, "WANDB_MODE": "disabled", "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run(cmd, cwd=env_file.parent, env=env, capture_output=True, text=True, timeout=300, check=False)


def _groups(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def ported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("hermes_env.port", reason="the port command (python -m hermes_env.port) is not installed")
    out = tmp_path_factory.mktemp("ported")
    for name in ("word_file_env", "answer_only_env"):
        _port(name, out)
    return out


@pytest.mark.e2e
@needs_bwrap
@pytest.mark.parametrize("phase", [1, 2])
def test_a_ported_agent_env_runs_process_in_both_phases(ported: Path, phase: int) -> None:
    out = ported / f"word_{phase}.jsonl"
    # Phase 1 on the bwrap backend, Phase 2 on the slot pool: upstream's default tool_pool_mode (nomad) is replaced
    # on the command line either way.
    backend = ["--env.terminal_backend", "bwrap"] if phase == 1 else ["--env.tool_pool_mode", "local"]
    if phase == 1:
        server: Any = ScriptedOpenAIServer(_openai_responder)
    else:
        from transformers import AutoTokenizer

        server = ScriptedVLLMServer(AutoTokenizer.from_pretrained(str(qwen3_tokenizer_dir())), _vllm_responder)
    with server:
        proc = _run(ported / "word_file_env.py", "process", f"{server.base_url}", phase, *backend,
                    "--env.total_steps", "2", "--env.data_path_to_save_groups", str(out))  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    groups = _groups(out)
    assert len(groups) == 2 and all(len(g["scores"]) == 2 for g in groups)
    # The environment's own reward: the word written, the answer, the steps, every tool result and the trained
    # tokens checked; the scripted agent is correct, so every rollout earns 1.0.
    assert [g["scores"] for g in groups] == [[1.0, 1.0], [1.0, 1.0]]
    for group in groups:
        word = re.search(r"Write the word (\w+)", group["messages"][0][0]["content"])[1]  # type: ignore[index]
        for override, masks in zip(group["overrides"], group["masks"], strict=True):
            meta = override["score_metadata"]
            assert meta["steps"] == 2 and meta["tool_calls"] == ["write_file"]
            assert json.loads(meta["tool_outputs"][0])["bytes_written"] == len(word) + 1
            assert meta["trained_tokens"] == sum(1 for m in masks if m != -100) > 0


@pytest.mark.e2e
@needs_bwrap
def test_a_ported_agent_env_evaluates_with_atropos_agent_and_the_tool_executor(ported: Path) -> None:
    with ScriptedOpenAIServer(_openai_responder) as server:
        proc = _run(ported / "word_file_env.py", "evaluate", server.base_url, 1, "--env.terminal_backend", "bwrap")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert re.search(r"eval/percent_correct\s+1(\.0+)?\s", proc.stdout), proc.stdout[-2000:]
    # Two eval tasks (besides the start's server check), each a write_file call through execute_tool, then the answer.
    firsts = [r for r in server.requests if r["messages"][-1]["role"] == "user" and "Write the word" in str(r)]
    assert len(firsts) == 2


@pytest.mark.e2e
def test_an_override_without_agent_result_or_workspace_meta_is_called_with_what_it_takes(ported: Path) -> None:
    out = ported / "answers.jsonl"
    with ScriptedOpenAIServer(_openai_responder) as server:
        proc = _run(ported / "answer_only_env.py", "process", server.base_url, 1, "--env.terminal_backend", "local",
                    "--env.data_path_to_save_groups", str(out))  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "reward failures         0" in proc.stdout
    groups = _groups(out)
    assert [g["scores"] for g in groups] == [[1.0, 1.0], [1.0, 1.0]]
    expected = {"sandbox": "alive", "trajectory": "answer_only_env"}
    assert all(o["score_metadata"] == expected for g in groups for o in g["overrides"])


def _load(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_upstreams_default_pool_loads_and_is_refused_at_start_naming_the_flags(ported: Path) -> None:
    from hermes_env.errors import ConfigError

    module = _load(ported / "answer_only_env.py")
    config, servers = module.AnswerOnlyEnv.config_init()  # upstream's default tool_pool_mode: nomad
    assert config.tool_pool_mode == "nomad"
    with pytest.raises(ConfigError, match="pass --env.tool_pool_mode with one of local, ray, container"):
        module.AnswerOnlyEnv(config, servers)
    assert module.AnswerOnlyEnv.verify_keywords() == frozenset()
    assert _load(ported / "word_file_env.py").WordFileEnv.verify_keywords() == {"agent_result", "workspace_meta"}


def test_agent_env_is_generic_and_verify_keywords_follow_the_override() -> None:
    from hermes_env import AgentEnv, AgentEnvConfig

    class MyConfig(AgentEnvConfig):
        level: int = 1

    class Kwargs(AgentEnv[MyConfig]):
        async def verify_and_score_trajectory(self, item: Any, final_response: str, **kwargs: Any) -> Any:
            return 0.0

    class OnlyMeta(AgentEnv[MyConfig]):
        async def verify_and_score_trajectory(  # type: ignore[override]
            self, item: Any, final_response: str, *, trajectory_id: str, exec_tool: Any, workspace_meta: Any = None
        ) -> Any:
            return 0.0

    assert AgentEnv[MyConfig] is not AgentEnv and issubclass(Kwargs, AgentEnv)
    assert Kwargs.verify_keywords() == {"agent_result", "workspace_meta"}
    assert OnlyMeta.verify_keywords() == {"workspace_meta"}
    assert AgentEnv.verify_keywords() == {"agent_result", "workspace_meta"}


def test_steps_tool_calls_and_results_come_from_the_conversation() -> None:
    messages = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "terminal", "arguments": '{"command": "false"}'}},
                {"id": "b", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "x"}'}},
                {"id": "c", "type": "function", "function": {"name": "terminal", "arguments": '{"command": "echo"}'}},
            ],
        },
        {"role": "tool", "tool_call_id": "a", "content": '{"output": "", "exit_code": 1, "error": null}'},
        {"role": "tool", "tool_call_id": "b", "content": '{"content": "1|hi", "total_lines": 1}'},
        {"role": "assistant", "content": "done"},
    ]
    first, last = steps_from_messages(messages)
    assert (first.step_number, last.step_number, last.assistant_message, last.has_tool_calls) == (1, 2, "done", False)
    assert [c.name for c in first.tool_calls] == ["terminal", "read_file", "terminal"]
    assert first.tool_calls[0].arguments == {"command": "false"} and first.tool_calls[0].uniq_id == "a"
    failed, read, unanswered = first.tool_results  # aligned with the calls, as upstream code zips them
    assert (failed.success, failed.error, failed.metadata["exit_code"]) == (False, "Exit code: 1", 1)
    assert (read.success, read.output, read.uniq_id) == (True, "1|hi", "b")
    assert unanswered.success is False and "no recorded result" in unanswered.error


@pytest.mark.parametrize(
    ("name", "text", "success", "output", "error"),
    [
        ("terminal", '{"output": "ok", "exit_code": 0, "error": null}', True, "ok", ""),
        ("bash", '{"output": "", "exit_code": 124, "error": "timed out"}', False, "", "timed out"),
        ("write_file", '{"error": "denied"}', False, '{"error": "denied"}', "denied"),
        ("web_search", '{"success": false, "results": []}', False, '{"success": false, "results": []}', ""),
        ("todo", "plain text", True, "plain text", ""),
    ],
)
def test_a_tool_answer_reads_as_a_tool_result(name: str, text: str, success: bool, output: str, error: str) -> None:
    result = tool_result_from_text(name, text, "id")
    assert (result.success, result.output, result.error, result.uniq_id) == (success, output, error, "id")


def test_tool_calls_parse_from_hermes_text_as_upstream_does() -> None:
    text = (
        '<tool_call>{"name": "terminal", "arguments": {"command": "ls"}}</tool_call>'
        '<tool_call>read_file{"path": "a"}</tool_call><tool_call>{broken</tool_call><tool_call>'
    )
    calls = ToolCall.parse_from_text(text)
    assert [(c.name, c.arguments) for c in calls] == [("terminal", {"command": "ls"}), ("read_file", {"path": "a"})]
    assert ToolCall.has_tool_call(text) and not ToolCall.has_tool_call("no call")


def test_front_config_maps_upstreams_modes_and_in_process_tools(tmp_path: Path) -> None:
    from hermes_env.hermes_agent.atropos.envs.agent_env import INPROCESS_TOOLS, AgentEnvConfig, python_shim

    direct = AgentEnvConfig(tool_pool_mode="docker_direct", sandbox_image="hermes_env/base:bookworm")
    assert direct.terminal_backend == "docker" and direct.backend_options()["image"] == "hermes_env/base:bookworm"
    assert AgentEnvConfig(tool_server_url="inprocess").tool_server_tools == INPROCESS_TOOLS
    assert AgentEnvConfig(tool_pool_mode="docker_direct", terminal_backend="bwrap").terminal_backend == "bwrap"

    class MirrorConfig(AgentEnvConfig):
        repo_base_url: str = "https://github.com"

    options = MirrorConfig(terminal_backend="bwrap", repo_base_url=f"file://{tmp_path}").backend_options()
    assert str(tmp_path) in options["ro_paths"] and options["allow_network"] is True
    trust = Path(options["env"]["GIT_CONFIG_GLOBAL"])
    assert trust.read_text() == "[safe]\n\tdirectory = *\n" and str(trust.parent) in options["ro_paths"]
    assert "GIT_CONFIG_GLOBAL" not in MirrorConfig(terminal_backend="bwrap").backend_options()["env"]
    if python_shim() is not None:  # a host whose /usr has no `python`: the slot pool's bubblewrap gets one too
        pool = AgentEnvConfig(tool_pool_mode="local").backend_options()
        shim = pool["env"]["PATH"].split(":")[0]
        assert shim in pool["ro_paths"] and Path(shim, "python").resolve().name.startswith("python3")


def test_skills_list_reads_the_skills_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hermes_env.hermes_agent.atropos.api.tool_server import skill_view, skills_list

    monkeypatch.setenv("HERMES_HOME", str(tmp_path))
    assert json.loads(skills_list({}))["skills"] == []
    skill = tmp_path / "skills" / "devops" / "deploy"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: deploy\ndescription: Ship it.\n---\n# Deploy\nSteps.\n")
    (tmp_path / "skills" / "notes").mkdir()
    (tmp_path / "skills" / "notes" / "SKILL.md").write_text("# Notes\nKeep notes short.\n")
    listed = json.loads(skills_list({}))
    assert listed["count"] == 2 and listed["categories"] == ["devops"]
    assert listed["skills"] == [
        {"name": "notes", "description": "Keep notes short.", "category": None},
        {"name": "deploy", "description": "Ship it.", "category": "devops"},
    ]
    assert json.loads(skills_list({"category": "devops"}))["count"] == 1
    assert "Steps." in json.loads(skill_view({"name": "deploy"}))["content"]
    assert json.loads(skill_view({"name": "deploy", "file_path": "../../notes/SKILL.md"}))["success"] is False
