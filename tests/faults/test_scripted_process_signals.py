"""Stopping ``process`` from outside: Ctrl-C (SIGINT) and SIGKILL, against the SCRIPTED demo policy server.

Ctrl-C: the groups in flight are cancelled and cleaned up, the summary and one line
(``interrupted after N groups; <file> holds N whole groups``) are printed, the exit status is 130,
no traceback, and the file holds exactly N whole groups (no file at all when N is 0).
SIGKILL: nothing can run at the end, so every complete line is a whole group; a write cut by the
kill can leave a partial last line (the kernel stops a write at a page boundary for a fatal
signal), which the next start on the same path removes."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fault_checks import TASKS, assert_trainable_group, read_trainable
from hermes_env.env.output import read_groups
from hermes_env.testing.scripted_vllm import FaultAtTurn

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.e2e


def _start_demo(out: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "WANDB_MODE": "disabled", "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "hermes_env.environments.terminal_tasks", "demo", "--groups", "400",
           "--group-size", "2", "--backend", "local", "--out", str(out)]  # fmt: skip
    # SIGINT back to its default in the child: a suite started in the background (`... &` in a script) runs with
    # SIGINT ignored, which the demo would inherit, and then Ctrl-C could not reach it.
    return subprocess.Popen(
        cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip


def _wait_for_lines(proc: subprocess.Popen[str], out: Path, lines: int, limit: float = 720) -> None:
    # ``limit`` is a hang guard, not a speed expectation: a 2-core CI machine under load can take minutes.
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline and proc.poll() is None:
        if out.exists() and out.read_bytes().count(b"\n") >= lines:
            return
        time.sleep(0.05)
    proc.kill()
    raise AssertionError(f"the demo did not write {lines} groups within {limit:g}s (exit {proc.poll()})")


@contextlib.contextmanager
def _demo_once_written(out: Path, lines: int) -> Iterator[subprocess.Popen[str]]:
    """The demo, once it has written ``lines`` groups to ``out``; killed (if still running) and reaped after."""
    proc = _start_demo(out)
    try:
        _wait_for_lines(proc, out, lines)
        yield proc
    finally:
        proc.kill()
        proc.communicate(timeout=30)


@pytest.mark.timeout(900)
def test_ctrl_c_prints_one_line_exits_130_and_keeps_whole_groups(tmp_path: Path, tok: Any) -> None:
    out = tmp_path / "interrupted.jsonl"
    with _demo_once_written(out, 2) as proc:
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr[-3000:]
    assert "Traceback" not in stderr and "Traceback" not in stdout, stderr[-3000:]
    groups = read_trainable(out, 2, len(tok))
    n = len(groups)
    assert n >= 2
    assert f"interrupted after {n} groups; {out} holds {n} whole groups" in stderr.splitlines()
    assert re.search(rf"groups written\s+{n}\n", stdout), stdout  # the summary was printed too


async def test_interrupt_before_the_first_group_leaves_no_file(
    scripted_server: Any, process_env: Any, solution_policy: Any, tmp_path: Path, capsys: Any
) -> None:
    """asyncio.run turns Ctrl-C into a cancellation of the main task; here that task is cancelled directly,
    while every rollout waits on a model call that hangs."""
    server = scripted_server(FaultAtTurn(solution_policy.vllm_responder, "hang", turn=0))
    env = process_env(server, groups=2, group_size=2)
    main = asyncio.current_task()
    assert main is not None

    async def ctrl_c() -> None:
        while not server.faults:  # the rollouts are waiting on the server
            await asyncio.sleep(0.05)
        main.cancel()

    interrupter = asyncio.create_task(ctrl_c())
    with pytest.raises(SystemExit) as info:  # process_manager runs in this task, as under asyncio.run
        await env.process_manager()
    await interrupter
    assert info.value.code == 130
    assert "interrupted after 0 groups; nothing was written" in capsys.readouterr().err
    assert not (tmp_path / "groups.jsonl").exists()
    assert os.listdir(tmp_path / "ws") == []  # every cancelled rollout's workspace was cleaned up


@pytest.mark.timeout(900)
def test_sigkill_leaves_whole_groups_and_the_next_start_removes_a_torn_tail(tmp_path: Path, tok: Any) -> None:
    from hermes_env.environments.terminal_tasks.env import TerminalTasksEnv
    from hermes_env.testing import qwen3_tokenizer_dir

    out = tmp_path / "killed.jsonl"
    with _demo_once_written(out, 3) as proc:
        os.kill(proc.pid, signal.SIGKILL)
    data = out.read_bytes()
    whole = read_groups(out)  # every complete line parses; a torn tail, if the kill cut a write, is skipped
    assert len(whole) >= 3 and data.count(b"\n") == len(whole)
    for group in whole:
        assert_trainable_group(group, 2, len(tok))
    # The next start on the same path (atroposlib moves on to killed_1.jsonl) repairs the old file.
    config = TerminalTasksEnv.env_config_cls(
        tokenizer_name=str(qwen3_tokenizer_dir()), use_wandb=False, data_path_to_save_groups=str(out)
    )
    env = TerminalTasksEnv(config, TerminalTasksEnv.config_init()[1])
    assert env.config.data_path_to_save_groups == str(tmp_path / "killed_1.jsonl")
    assert read_trainable(out, 2, len(tok)) == whole  # whole lines only, none lost
    assert not (tmp_path / "killed_1.jsonl").exists()  # and no empty file for a run that wrote nothing
    asyncio.run(env.close())


def test_torn_tail_repair_is_what_a_killed_write_needs(tmp_path: Path) -> None:
    """The SIGKILL above lands mid-write only by chance; this cuts a real group line the way the kernel does."""
    line = (TASKS[0]["prompt"] * 2000 + "\n").encode()
    out = tmp_path / "cut.jsonl"
    out.write_bytes(b'{"scores": [1.0]}\n' + line[: 4096 * 3])  # stopped at a page boundary
    from hermes_env.env.output import GroupJsonlWriter

    with GroupJsonlWriter(out) as writer:
        writer.write({"scores": [0.0]})
    assert [g["scores"] for g in read_groups(out)] == [[1.0], [0.0]] and out.read_bytes().endswith(b"\n")
