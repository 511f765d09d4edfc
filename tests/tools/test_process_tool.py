"""Background jobs: terminal(background=true) and hermes-agent's process tool, on local and bwrap."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hermes_env.backends import ExecutionBackend
from hermes_env.tools import REGISTRY, ToolCallContext
from hermes_env.tools.process_tool import kill_all_processes

from tests.support.procs import wait_no_process_holding


@pytest.fixture
def ctx(backend: ExecutionBackend) -> ToolCallContext:
    return ToolCallContext("task", backend, timeout=10, max_timeout=20, background_timeout=60)


async def run(name: str, args: dict[str, Any], ctx: ToolCallContext) -> dict[str, Any]:
    return json.loads(await REGISTRY.dispatch(name, args, ctx))


async def test_background_job_runs_while_the_agent_goes_on(ctx: ToolCallContext) -> None:
    started = await run("terminal", {"command": "echo begin; sleep 0.5; echo end; exit 3", "background": True}, ctx)
    assert started["output"] == "Background process started" and started["exit_code"] == 0
    sid = started["session_id"]
    assert sid.startswith("proc_") and isinstance(started["pid"], int)
    poll = await run("process", {"action": "poll", "session_id": sid}, ctx)
    assert poll["status"] == "running" and poll["command"].startswith("echo begin")
    done = await run("process", {"action": "wait", "session_id": sid, "timeout": 10}, ctx)
    assert done == {"status": "exited", "exit_code": 3, "output": "begin\nend\n"}
    log = await run("process", {"action": "log", "session_id": sid}, ctx)
    assert log["output"] == "begin\nend" and log["total_lines"] == 2 and log["status"] == "exited"
    listed = await run("process", {"action": "list"}, ctx)
    assert [p["session_id"] for p in listed["processes"]] == [sid] and listed["processes"][0]["exit_code"] == 3


async def test_stdin_write_submit_and_kill(ctx: ToolCallContext) -> None:
    job = await run("terminal", {"command": "while read line; do echo got:$line; done", "background": True}, ctx)
    sid = job["session_id"]
    assert (await run("process", {"action": "submit", "session_id": sid, "data": "one"}, ctx)) == {
        "status": "ok",
        "bytes_written": 4,
    }
    await run("process", {"action": "write", "session_id": sid, "data": "two\n"}, ctx)
    for _ in range(100):
        if "got:two" in (await run("process", {"action": "poll", "session_id": sid}, ctx))["output_preview"]:
            break
        await asyncio.sleep(0.05)
    assert (await run("process", {"action": "log", "session_id": sid}, ctx))["output"] == "got:one\ngot:two"
    assert await run("process", {"action": "kill", "session_id": sid}, ctx) == {"status": "killed", "session_id": sid}
    assert (await run("process", {"action": "kill", "session_id": sid}, ctx))["status"] == "already_exited"
    assert (await run("process", {"action": "write", "session_id": sid, "data": "x"}, ctx))[
        "status"
    ] == "already_exited"


async def test_close_ends_stdin_and_the_job_goes_on(ctx: ToolCallContext) -> None:
    # newer hermes-agent's "close": end-of-file after the writes, not between them; the job itself is not stopped
    job = await run("terminal", {"command": "cat; echo after-eof; exit 5", "background": True}, ctx)
    sid = job["session_id"]
    await run("process", {"action": "submit", "session_id": sid, "data": "one"}, ctx)
    await asyncio.sleep(0.2)  # a gap between writes: the job must not take it for end-of-file
    await run("process", {"action": "write", "session_id": sid, "data": "two\n"}, ctx)
    assert await run("process", {"action": "close", "session_id": sid}, ctx) == {
        "status": "ok",
        "message": "stdin closed",
    }
    assert await run("process", {"action": "wait", "session_id": sid, "timeout": 10}, ctx) == {
        "status": "exited",
        "exit_code": 5,
        "output": "one\ntwo\nafter-eof\n",
    }
    assert (await run("process", {"action": "close", "session_id": sid}, ctx))["status"] == "already_exited"
    await wait_no_process_holding(f"{sid}.")


async def test_a_closed_stdin_takes_no_more_input(ctx: ToolCallContext) -> None:
    job = await run("terminal", {"command": "cat >/dev/null; echo eof; sleep 30", "background": True}, ctx)
    sid = job["session_id"]
    assert (await run("process", {"action": "close", "session_id": sid}, ctx))["status"] == "ok"
    for _ in range(100):
        if "eof" in (await run("process", {"action": "poll", "session_id": sid}, ctx))["output_preview"]:
            break
        await asyncio.sleep(0.05)
    stale = {"status": "error", "error": "Process stdin not available (stdin closed)"}
    assert await run("process", {"action": "write", "session_id": sid, "data": "x"}, ctx) == stale
    assert await run("process", {"action": "close", "session_id": sid}, ctx) == stale
    poll = await run("process", {"action": "poll", "session_id": sid}, ctx)
    assert poll["status"] == "running" and poll["output_preview"] == "eof\n"
    assert (await run("process", {"action": "kill", "session_id": sid}, ctx))["status"] == "killed"
    await wait_no_process_holding(f"{sid}.")


async def test_the_stdin_holder_ends_with_its_job(ctx: ToolCallContext) -> None:
    # never closed: the job ends by itself and takes the process holding its stdin open with it
    job = await run("terminal", {"command": "read x; echo got:$x", "background": True}, ctx)
    sid = job["session_id"]
    await run("process", {"action": "submit", "session_id": sid, "data": "hi"}, ctx)
    done = await run("process", {"action": "wait", "session_id": sid, "timeout": 10}, ctx)
    assert done == {"status": "exited", "exit_code": 0, "output": "got:hi\n"}
    await wait_no_process_holding(f"{sid}.")


async def test_wait_times_out_and_cleanup_kills_running_jobs(ctx: ToolCallContext) -> None:
    sid = (await run("terminal", {"command": "sleep 30", "background": True}, ctx))["session_id"]
    waited = await run("process", {"action": "wait", "session_id": sid, "timeout": 1}, ctx)
    assert waited["status"] == "timeout" and waited["timeout_note"] == "Waited 1s, process still running"
    ctx.timeout = ctx.max_timeout = 1.0
    clamped = await run("process", {"action": "wait", "session_id": sid, "timeout": 1000}, ctx)
    assert clamped["timeout_note"] == "Requested wait of 1000s was clamped to configured limit of 1s"
    assert await kill_all_processes(ctx.state) == 1
    assert (await run("process", {"action": "poll", "session_id": sid}, ctx))["status"] == "exited"


async def test_process_errors_are_hermes_agents(ctx: ToolCallContext) -> None:
    assert await run("process", {"action": "poll"}, ctx) == {"error": "session_id is required for poll"}
    assert await run("process", {"action": "poll", "session_id": "proc_x"}, ctx) == {
        "status": "not_found",
        "error": "No process with ID proc_x",
    }
    assert (await run("process", {"action": "dance"}, ctx))["error"].startswith("Unknown process action: dance.")


async def test_background_jobs_on_the_slot_pool_do_not_hold_the_slot(pool_ctx: ToolCallContext) -> None:
    ctx = pool_ctx
    job = await run("terminal", {"command": "sleep 30", "background": True}, ctx)
    assert isinstance(job["pid"], int)
    # The slot runs one call at a time: a job held as a call would make this wait 30 s.
    quick = await asyncio.wait_for(run("terminal", {"command": "echo free"}, ctx), 10)
    assert quick["output"] == "free"
    echo = await run("terminal", {"command": "read x; echo got:$x; exit 4", "background": True}, ctx)
    await run("process", {"action": "submit", "session_id": echo["session_id"], "data": "hello"}, ctx)
    assert await run("process", {"action": "wait", "session_id": echo["session_id"], "timeout": 10}, ctx) == {
        "status": "exited",
        "exit_code": 4,
        "output": "got:hello\n",
    }
    assert await run("process", {"action": "kill", "session_id": job["session_id"]}, ctx) == {
        "status": "killed",
        "session_id": job["session_id"],
    }
    left = await ctx.backend.call_tool(ctx.task_id, "bash_stateful", {"command": "pgrep -c -x sleep || true"}, 10)
    assert left.output.strip() == "0"


async def test_close_on_the_slot_pool(pool_ctx: ToolCallContext) -> None:
    # the job is started from the slot's lasting shell, which must keep none of its FIFOs open, or stdin would not end
    ctx = pool_ctx
    job = await run("terminal", {"command": "cat; echo after-eof; exit 6", "background": True}, ctx)
    sid = job["session_id"]
    await run("process", {"action": "submit", "session_id": sid, "data": "one"}, ctx)
    assert (await run("process", {"action": "close", "session_id": sid}, ctx))["status"] == "ok"
    assert await run("process", {"action": "wait", "session_id": sid, "timeout": 10}, ctx) == {
        "status": "exited",
        "exit_code": 6,
        "output": "one\nafter-eof\n",
    }
    await wait_no_process_holding(f"{sid}.")


async def test_the_stdin_holder_ends_with_its_job_on_the_slot_pool(pool_ctx: ToolCallContext) -> None:
    # there the holder is a child of the slot's lasting shell, and nothing but the job's end stops it
    await test_the_stdin_holder_ends_with_its_job(pool_ctx)
