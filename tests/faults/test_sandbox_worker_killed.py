"""``process`` with tools in the sandbox pool (``terminal_backend: sandbox``) while the worker running a
rollout's tool call is SIGKILLed: that rollout fails with ``sandbox_failed``, its group is dropped whole,
the pool replaces the worker, and the run goes on to write only complete groups of finished rollouts."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
from pathlib import Path
from typing import Any

import pytest
from fault_checks import TASKS, read_trainable, user_prompt
from hermes_env.backends.bwrap import bwrap_problem
from hermes_env.testing.policies import think, tool_call_text

from tests.support.procs import pids_with_cmdline, wait_no_process_with_cmdline

VICTIM, CLEAN = TASKS[0], TASKS[1]
MARKER = "sleep 29.5"  # the victim's tool call; never finishes: its worker is killed under it

pytestmark = pytest.mark.skipif(bwrap_problem() is not None, reason=f"bubblewrap unusable: {bwrap_problem()}")


def _parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("PPid:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _kill_workers_once(marker: str, pool: Any, killed: list[int]) -> None:
    """SIGKILL every pool worker with ``marker`` running beneath it (each worker once)."""
    workers = {w.pid for w in pool.workers if w.pid is not None}
    for pid in pids_with_cmdline(marker):
        ancestor: int | None = pid
        while ancestor not in (None, 0, 1) and ancestor not in workers:
            ancestor = _parent(ancestor)  # type: ignore[arg-type]
        if ancestor in workers and ancestor not in killed:
            killed.append(ancestor)  # type: ignore[arg-type]
            with contextlib.suppress(ProcessLookupError):
                os.kill(ancestor, signal.SIGKILL)  # type: ignore[arg-type]


async def _kill_workers_running(marker: str, pool: Any, killed: list[int]) -> None:
    """:func:`_kill_workers_once`, for as long as the run lasts."""
    while True:
        _kill_workers_once(marker, pool, killed)
        await asyncio.sleep(0.1)


async def test_worker_killed_mid_call_fails_only_its_rollout_group(
    scripted_server: Any, process_env: Any, solution_policy: Any, tok: Any, tmp_path: Path, caplog: Any, capsys: Any
) -> None:
    def respond(request: Any) -> str:
        if VICTIM["prompt"] in request.prompt_text and request.prompt_text.count("<|im_start|>assistant") == 1:
            return think("This takes a while.") + tool_call_text("terminal", {"command": f"{MARKER}; echo never"})
        return solution_policy.vllm_responder(request)

    server = scripted_server(respond)
    options = {"slots_per_worker": 2, "min_workers": 2, "max_workers": 2, "health_interval_s": 0.5}
    # One group at a time: a clean rollout never shares a worker with the one being killed.
    env = process_env(
        server, groups=2, group_size=2, process_concurrency=1, terminal_backend="sandbox",
        terminal_backend_options=options, terminal_timeout=60,
    )  # fmt: skip
    killed: list[int] = []
    watcher = asyncio.create_task(_kill_workers_running(MARKER, env.backend.pool, killed))
    try:
        await env.process_manager()
    finally:
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)
    printed = capsys.readouterr().out
    assert killed, "no worker was killed: the victim's call never ran"
    groups = read_trainable(tmp_path / "groups.jsonl", 2, len(tok))
    assert len(groups) == 2
    assert all(user_prompt(conv) == CLEAN["prompt"] for g in groups for conv in g["messages"])
    assert not any("never" in str(m.get("content")) for g in groups for conv in g["messages"] for m in conv)
    dropped = env.rollout_stats.dropped_by_cause
    assert set(dropped) == {"sandbox_failed"} and dropped["sandbox_failed"] >= 1, dropped
    logs = [r.getMessage() for r in caplog.records if "dropping group" in r.getMessage()]
    assert len(logs) == dropped["sandbox_failed"] and all("sandbox_failed: the tool backend failed" in m for m in logs)
    assert "sandbox_failed" in next(line for line in printed.splitlines() if "groups dropped" in line)
    await env.close()
    # The killed workers' sandboxes wind down by themselves; none of the victim's commands outlives the run.
    await wait_no_process_with_cmdline(MARKER, limit_s=30)


REWARD_MARKER = "sleep 29.4"  # the victim's reward check; its worker is killed under it


def _kill_workers_running_in_a_thread(marker: str, pool: Any, killed: list[int], stop: threading.Event) -> None:
    """:func:`_kill_workers_running` from a thread: a synchronous reward call blocks the event loop."""
    while not stop.is_set():
        _kill_workers_once(marker, pool, killed)
        stop.wait(0.1)


async def test_worker_killed_under_a_reward_that_catches_everything_fails_the_rollout(
    scripted_server: Any, process_env: Any, solution_policy: Any, tok: Any, tmp_path: Path, caplog: Any
) -> None:
    server = scripted_server(solution_policy.vllm_responder)
    options = {"slots_per_worker": 2, "min_workers": 2, "max_workers": 2, "health_interval_s": 0.5}
    env = process_env(
        server, groups=2, group_size=2, process_concurrency=1, terminal_backend="sandbox",
        terminal_backend_options=options, terminal_timeout=60,
    )  # fmt: skip

    def compute_reward(item: dict[str, Any], result: Any, ctx: Any) -> float:
        """hermes-agent style: no await, dict results, and every exception taken for a failed check."""
        command = f"{REWARD_MARKER}; {item['check']}" if item["id"] == VICTIM["id"] else item["check"]
        try:
            return 1.0 if ctx.terminal(command, timeout=60)["exit_code"] == 0 else 0.0
        except Exception:
            return 0.0

    env.compute_reward = compute_reward
    killed: list[int] = []
    stop = threading.Event()
    watcher = threading.Thread(
        target=_kill_workers_running_in_a_thread, args=(REWARD_MARKER, env.backend.pool, killed, stop), daemon=True
    )
    watcher.start()
    try:
        await env.process_manager()
    finally:
        stop.set()
        watcher.join()
    assert killed, "no worker was killed: the victim's reward check never ran"
    groups = read_trainable(tmp_path / "groups.jsonl", 2, len(tok))
    assert len(groups) == 2 and all(g["scores"] == [1.0, 1.0] for g in groups)
    assert all(user_prompt(conv) == CLEAN["prompt"] for g in groups for conv in g["messages"])
    dropped = env.rollout_stats.dropped_by_cause
    assert set(dropped) == {"sandbox_failed"} and dropped["sandbox_failed"] >= 1, dropped
    assert env.rollout_stats.summary()["reward_failures"] == 0
    assert any("sandbox_failed: the tool backend failed" in r.getMessage() for r in caplog.records)
    await env.close()
    # The killed workers' sandboxes wind down by themselves; none of the victim's commands outlives the run.
    await wait_no_process_with_cmdline(REWARD_MARKER, limit_s=30)
