"""E2E (b): ``serve`` against atroposlib's real ``run-api``, with a minimal trainer that registers and pulls /batch."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from e2e_helpers import REPO, TASKS, free_port, write_tasks
from hermes_env.testing import qwen3_tokenizer, qwen3_tokenizer_dir
from hermes_env.testing.policies import SolutionPolicy
from hermes_env.testing.scripted_vllm import ScriptedVLLMServer

pytestmark = pytest.mark.e2e

GROUP_SIZE = 4
BATCH_SIZE = 8


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(20)


@pytest.fixture
def run_api() -> Iterator[str]:
    """atroposlib's Trajectory API (`run-api`) on a free 127.0.0.1 port."""
    port = free_port()
    exe = Path(sys.executable).with_name("run-api")
    proc = subprocess.Popen(
        [str(exe), "--host", "127.0.0.1", "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/status", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline and proc.poll() is None, "run-api did not start"
            time.sleep(0.2)
        yield url
    finally:
        _stop(proc)


def _register_trainer(url: str, tmp_path: Path) -> None:
    reg = httpx.post(
        f"{url}/register",
        json={
            "wandb_group": "test",
            "wandb_project": "test",
            "batch_size": BATCH_SIZE,
            "max_token_len": 32768,
            "checkpoint_dir": str(tmp_path / "ckpt"),
            "save_checkpoint_interval": -1,
            "starting_step": 0,
            "num_steps": 100,
        },
        timeout=10,
    )
    reg.raise_for_status()
    assert "uuid" in reg.json()
    assert httpx.get(f"{url}/batch", timeout=10).json()["batch"] is None  # marks the trainer as started


def test_serve_sends_complete_groups_to_run_api(run_api: str, tmp_path: Path) -> None:
    _register_trainer(run_api, tmp_path)
    tasks_file = write_tasks(tmp_path / "tasks.jsonl")
    policy = SolutionPolicy(TASKS, seed=5)
    log = (tmp_path / "serve.log").open("w")
    with ScriptedVLLMServer(qwen3_tokenizer(), policy.vllm_responder) as server:
        env_proc = subprocess.Popen(
            [
                sys.executable, "-m", "hermes_env.envs.terminal_tasks", "serve",
                "--openai.base_url", server.base_url, "--openai.server_type", "vllm",
                "--openai.tokenizer_name", str(qwen3_tokenizer_dir()),
                "--env.rollout_server_url", run_api,
                "--env.dataset_name", str(tasks_file),
                "--env.terminal_backend", "local",
                "--env.group_size", str(GROUP_SIZE),
                "--env.total_steps", "1000",
                "--env.use_wandb", "false",
                "--env.max_num_workers", "4",
            ],
            cwd=REPO, env={**os.environ, "WANDB_MODE": "disabled"}, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        batches: list[list[dict[str, Any]]] = []
        try:
            deadline = time.monotonic() + 180
            while len(batches) < 2:
                assert env_proc.poll() is None, (tmp_path / "serve.log").read_text()[-3000:]
                assert time.monotonic() < deadline, (
                    "no batches arrived: " + (tmp_path / "serve.log").read_text()[-3000:]
                )
                batch = httpx.get(f"{run_api}/batch", timeout=10).json()["batch"]
                if batch:
                    batches.append(batch)
                else:
                    time.sleep(0.5)
        finally:
            _stop(env_proc)
            log.close()
    for batch in batches:
        assert sum(len(group["tokens"]) for group in batch) == BATCH_SIZE
        for group in batch:
            # Complete groups only: every rollout of the group, arrays aligned, scores that differ.
            assert len(group["tokens"]) == len(group["masks"]) == len(group["scores"]) == GROUP_SIZE
            assert len(group["inference_logprobs"]) == GROUP_SIZE
            assert len(set(group["scores"])) > 1
            assert group["env_id"] == 0
            for tokens, masks, logprobs in zip(
                group["tokens"], group["masks"], group["inference_logprobs"], strict=True
            ):
                assert len(tokens) == len(masks) == len(logprobs)
                assert any(m != -100 for m in masks)
                assert all(m in (-100, t) for t, m in zip(tokens, masks, strict=True))
                assert all(lp == 1.0 for lp, m in zip(logprobs, masks, strict=True) if m == -100)
