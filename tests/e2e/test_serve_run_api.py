"""E2E (b): the README's training loop on 127.0.0.1 — atroposlib's real ``run-api``, ``serve`` against a scripted
vLLM policy, and ``hermes_env.testing.trainer_stub`` pulling batches — ending by itself.

The trainer stub exits after two batches; ``serve`` stops on its own once the trainer's step count passes
``--env.total_steps``; only ``run-api`` (a server that never exits) is stopped by the test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from e2e_helpers import REPO, TASKS, free_port, write_tasks
from hermes_env.resources import qwen3_tokenizer
from hermes_env.testing.policies import SolutionPolicy
from hermes_env.testing.scripted_vllm import ScriptedVLLMServer

pytestmark = pytest.mark.e2e

GROUP_SIZE = 4
BATCH_SIZE = 8
# Hang guards only (a stuck process fails the test instead of blocking the suite); nothing asserts on time.
HANG_GUARD_S = 480


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(20)


def _start_run_api(port: int) -> subprocess.Popen[bytes]:
    exe = Path(sys.executable).with_name("run-api")
    return subprocess.Popen(
        [str(exe), "--host", "127.0.0.1", "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


@pytest.fixture
def run_api() -> Iterator[str]:
    """atroposlib's Trajectory API (`run-api`) on a free 127.0.0.1 port."""
    port = free_port()
    proc = _start_run_api(port)
    url = f"http://127.0.0.1:{port}"
    try:
        while True:
            try:
                if httpx.get(f"{url}/status", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None, "run-api exited before it answered"
            time.sleep(0.2)
        yield url
    finally:
        _stop(proc)


def _trainer_stub(api: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "hermes_env.testing.trainer_stub", "--api", api, *args],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip


def test_trainer_stub_waits_for_run_api_started_after_it() -> None:
    """The README starts run-api in the background right before the stub; the stub registers once it answers."""
    port = free_port()
    api = f"http://127.0.0.1:{port}"
    trainer = _trainer_stub(api, "--batches", "1", "--timeout", "1", "--api-wait", str(HANG_GUARD_S))
    assert trainer.stdout is not None
    first = trainer.stdout.readline()  # printed before run-api exists
    api_proc = _start_run_api(port)
    try:
        rest, _ = trainer.communicate(timeout=HANG_GUARD_S)
    finally:
        _stop(trainer)
        _stop(api_proc)
    assert first.strip() == f"trainer_stub: waiting for run-api at {api}"
    assert f"trainer_stub: registered at {api}" in rest
    # Nothing serves groups here, so the batch wait ends with the hint about serve and equal scores.
    assert trainer.returncode == 1 and "0 of 1 batches arrived" in rest and "ensure_scores_are_not_same" in rest


def test_trainer_stub_without_run_api_says_how_to_start_it() -> None:
    api = f"http://127.0.0.1:{free_port()}"
    trainer = _trainer_stub(api, "--api-wait", "1")
    out, _ = trainer.communicate(timeout=HANG_GUARD_S)
    assert trainer.returncode == 1
    assert f"could not reach run-api at {api} within 1s" in out and ".venv/bin/run-api --host 127.0.0.1" in out


def test_scripted_serve_loop_with_trainer_stub(run_api: str, tmp_path: Path) -> None:
    tasks_file = write_tasks(tmp_path / "tasks.jsonl")
    policy = SolutionPolicy(TASKS, seed=5)
    batches_file = tmp_path / "batches.jsonl"
    env = {**os.environ, "WANDB_MODE": "disabled", "PYTHONUNBUFFERED": "1"}
    serve_log = (tmp_path / "serve.log").open("w")
    with ScriptedVLLMServer(qwen3_tokenizer(), policy.vllm_responder) as server:
        trainer = subprocess.Popen(
            [sys.executable, "-m", "hermes_env.testing.trainer_stub", "--api", run_api,
             "--batch-size", str(BATCH_SIZE), "--batches", "2", "--timeout", str(HANG_GUARD_S),
             "--out", str(batches_file)],
            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        serve = subprocess.Popen(
            [
                sys.executable, "-m", "hermes_env.environments.terminal_tasks", "serve",
                "--openai.base_url", server.base_url, "--openai.server_type", "vllm",
                "--openai.tokenizer_name", "bundled:qwen3",
                "--env.rollout_server_url", run_api,
                "--env.dataset_name", str(tasks_file),
                "--env.terminal_backend", "local",
                "--env.group_size", str(GROUP_SIZE),
                "--env.batch_size", str(BATCH_SIZE),
                "--env.total_steps", "2",
                "--env.use_wandb", "false",
                "--env.max_num_workers", "4",
            ],
            cwd=REPO, env=env, stdout=serve_log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            trainer_out, _ = trainer.communicate(timeout=HANG_GUARD_S)
            serve_rc = serve.wait(timeout=HANG_GUARD_S)
        finally:
            _stop(trainer)
            _stop(serve)
            serve_log.close()
    serve_text = (tmp_path / "serve.log").read_text()
    assert trainer.returncode == 0, trainer_out + serve_text[-3000:]
    assert serve_rc == 0, serve_text[-3000:]
    assert "batch 1:" in trainer_out and "batch 2:" in trainer_out and "problem" not in trainer_out
    batches = [json.loads(line) for line in batches_file.read_text().splitlines()]
    assert len(batches) == 2
    for batch in batches:
        assert sum(len(group["tokens"]) for group in batch) == BATCH_SIZE
        for group in batch:
            # Complete groups only: every rollout of the group, arrays aligned, scores that differ.
            assert len(group["tokens"]) == len(group["masks"]) == len(group["scores"]) == GROUP_SIZE
            assert len(group["inference_logprobs"]) == GROUP_SIZE
            assert len(set(group["scores"])) > 1  # ensure_scores_are_not_same: equal-score groups never arrive
            assert group["env_id"] == 0
            for tokens, masks, logprobs in zip(
                group["tokens"], group["masks"], group["inference_logprobs"], strict=True
            ):
                assert len(tokens) == len(masks) == len(logprobs)
                assert any(m != -100 for m in masks)
                assert all(m in (-100, t) for t, m in zip(tokens, masks, strict=True))
                assert all(lp == 1.0 for lp, m in zip(logprobs, masks, strict=True) if m == -100)
