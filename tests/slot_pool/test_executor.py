"""ToolExecutor over a real local pool: tools, ordering, batching, timeouts, artifacts, release."""

from __future__ import annotations

import asyncio
import base64
import io
import tarfile

import aiohttp
from hermes_env.slot_pool import SlotPool, ToolExecutor, decode_content


async def test_bash_runs_in_the_slot_workspace(executor: ToolExecutor) -> None:
    r = await executor.execute("t1", "bash", {"command": "pwd; echo out; echo err >&2; exit 3"})
    assert r.exit_code == 3 and r.error is None
    assert r.output.splitlines() == ["/workspace", "out", "err"]
    r = await executor.execute("t1", "bash", {"command": "tr a-z A-Z", "stdin": "hello"})
    assert r.ok and r.output == "HELLO"


async def test_results_come_back_in_call_order(executor: ToolExecutor) -> None:
    calls = [
        ("write_file", {"path": "a/b.txt", "content": "one"}),
        ("bash", {"command": "cat a/b.txt; echo -n two >> a/b.txt"}),
        ("read_file", {"path": "a/b.txt"}),
        ("bash", {"command": "exit 7"}),
        ("nope", {}),
    ]
    results = await executor.execute_many("order", calls)
    assert [r.exit_code for r in results[:4]] == [0, 0, 0, 7]
    assert results[1].output == "one"
    assert decode_content(results[2]) == b"onetwo"
    assert results[4].error_type == "unknown_tool" and "bash" in (results[4].error or "")


async def test_concurrent_calls_are_batched_per_worker(executor: ToolExecutor) -> None:
    before_batches, before_calls = executor.batches_sent, executor.calls_sent
    results = await asyncio.gather(
        *(executor.execute(f"b{i % 4}", "bash", {"command": f"echo {i}"}) for i in range(24))
    )
    assert [r.output.strip() for r in results] == [str(i) for i in range(24)]
    assert executor.calls_sent - before_calls == 24
    assert executor.batches_sent - before_batches < 24  # several calls shared a /batch request


async def test_stateful_shell_keeps_cwd_and_env_and_recovers_from_timeout(executor: ToolExecutor) -> None:
    assert (await executor.execute("s", "bash_stateful", {"command": "mkdir -p d && cd d && export K=v1"})).ok
    r = await executor.execute("s", "bash_stateful", {"command": "pwd; echo $K"})
    assert r.output.split() == ["/workspace/d", "v1"]
    r = await executor.execute("s", "bash_stateful", {"command": "false"})
    assert r.exit_code == 1
    r = await executor.execute("s", "bash_stateful", {"command": "echo 'unclosed"})
    assert r.exit_code == 2 and "syntax error" in r.output
    r = await executor.execute("s", "bash_stateful", {"command": "sleep 30"}, timeout=1)
    assert r.timed_out and r.exit_code == 124
    r = await executor.execute("s", "bash_stateful", {"command": "pwd; echo ${K:-unset}"})
    assert "fresh shell" in r.output and r.output.split()[-2:] == ["/workspace", "unset"]


async def test_tmux_session_persists(executor: ToolExecutor) -> None:
    r = await executor.execute("tm", "tmux", {"keys": "cd /tmp && X=$((6*7)) && echo tmux-$X", "wait_ms": 500})
    assert r.ok, r.output
    assert "tmux-42" in r.output
    r = await executor.execute("tm", "tmux", {"keys": "pwd", "wait_ms": 500})
    assert "/tmp" in r.output.splitlines()[-2:]
    r = await executor.execute("tm", "tmux", {"action": "bogus"})
    assert r.error_type == "bad_arguments"


async def test_timeouts_are_clamped_to_the_maximum(pool: SlotPool) -> None:
    from hermes_env.slot_pool import ExecutorConfig

    async with ToolExecutor(pool, ExecutorConfig(max_timeout_s=1.0)) as ex:
        r = await ex.execute("slow", "bash", {"command": "sleep 30"}, timeout=10_000)
    assert r.timed_out and "timed out after 1s" in r.output


async def test_bad_arguments_are_error_results(executor: ToolExecutor) -> None:
    r = await executor.execute("bad", "bash", {"cmd": "ls"})
    assert r.error_type == "bad_arguments" and "command" in (r.error or "")
    r = await executor.execute("bad", "write_file", {"path": "x"})
    assert r.error_type == "bad_arguments"
    r = await executor.execute("bad", "read_file", {"path": "missing.txt"})
    assert r.error_type == "not_found"


async def test_artifacts_read_list_archive(executor: ToolExecutor) -> None:
    await executor.execute(
        "art", "bash", {"command": "mkdir -p out/sub && echo a > out/a && printf '\\x00\\xff' > out/sub/b"}
    )
    listed = await executor.list_artifacts("art", "out")
    assert listed.data["files"] == ["out/a", "out/sub/b"]
    read = await executor.read_artifact("art", "out/sub/b")
    assert decode_content(read) == b"\x00\xff"
    archived = await executor.archive_artifacts("art", "out")
    with tarfile.open(fileobj=io.BytesIO(base64.b64decode(archived.data["archive_b64"]))) as tar:
        names = sorted(m.name for m in tar.getmembers() if m.isfile())
    assert names == ["out/a", "out/sub/b"]


async def test_release_resets_the_workspace_and_affinity_keeps_the_worker(executor: ToolExecutor) -> None:
    pool = executor.pool
    await executor.execute("rel", "bash", {"command": "echo keep > f; sleep 300 >/dev/null 2>&1 &"})
    lease = pool.lease_of("rel")
    assert lease is not None and await pool.acquire("rel") == lease  # affinity: same slot while leased
    await executor.release_trajectory("rel")
    assert pool.lease_of("rel") is None
    r = await executor.execute("rel", "bash", {"command": "ls -A; pgrep -c sleep || true"})
    new_lease = pool.lease_of("rel")
    assert new_lease is not None and new_lease.worker_id == lease.worker_id
    assert r.output.split() == ["0"]  # empty workspace, and the background sleep was killed


async def test_policy_cannot_be_set_by_a_request(executor: ToolExecutor) -> None:
    lease = await executor.pool.acquire("pol")
    body = {"slot": lease.slot, "tool": "bash", "args": {"command": "true"}, "allow_network": True}
    async with (
        aiohttp.ClientSession(headers=executor.pool.auth_headers) as s,
        s.post(lease.url + "/execute", json=body) as resp,
    ):
        assert resp.status == 422
        assert "allow_network" in await resp.text()
    async with aiohttp.ClientSession(headers=executor.pool.auth_headers) as s, s.get(lease.url + "/health") as resp:
        assert (await resp.json())["allow_network"] is False
    # Only the pool that started a worker can drive it: without the pool's secret the answer is 401.
    async with aiohttp.ClientSession() as s, s.post(lease.url + "/execute", json=body) as resp:
        assert resp.status == 401


async def test_many_trajectories_with_tiny_batches_all_complete(pool: SlotPool) -> None:
    # Regression: a dispatcher built on wait_for(queue.get()) loses calls when a get completes as the
    # window times out; with many small windows some trajectory would then wait forever.
    from hermes_env.slot_pool import ExecutorConfig

    async with ToolExecutor(pool, ExecutorConfig(batch_window_ms=0.5, max_batch_size=3)) as ex:

        async def trajectory(t: int) -> list[str]:
            out = []
            for c in range(30):
                tool = "read_file" if c % 2 else "write_file"
                out.append((await ex.execute(f"many-{t}", tool, {"path": "f", "content": f"{t}:{c}"})).output)
            return out

        results = await asyncio.wait_for(asyncio.gather(*(trajectory(t) for t in range(8))), 120)
    for t, outputs in enumerate(results):
        assert outputs[1::2] == [f"{t}:{c}" for c in range(0, 30, 2)]
    assert ex.calls_sent == 240 and ex.batches_sent >= 240 // 3


async def test_a_fast_call_is_not_held_back_by_a_slow_one_in_its_batch(pool: SlotPool) -> None:
    from hermes_env.slot_pool import ExecutorConfig

    async with ToolExecutor(pool, ExecutorConfig(batch_window_ms=50)) as ex:
        await asyncio.gather(
            ex.execute("slow", "bash", {"command": "true"}), ex.execute("fast", "bash", {"command": "true"})
        )
        assert pool.lease_of("slow").worker_id == pool.lease_of("fast").worker_id  # type: ignore[union-attr]
        batches = ex.batches_sent
        slow = asyncio.create_task(ex.execute("slow", "bash", {"command": "sleep 5; echo slow"}))
        fast = asyncio.create_task(ex.execute("fast", "bash", {"command": "echo fast"}))
        done, _ = await asyncio.wait({slow, fast}, return_when=asyncio.FIRST_COMPLETED)
        assert done == {fast} and fast.result().output == "fast\n"
        assert ex.batches_sent == batches + 1  # both went in the same /batch request
        assert (await slow).output == "slow\n"


async def test_plain_json_batch_answer_for_other_clients(executor: ToolExecutor) -> None:
    lease = await executor.pool.acquire("plain")
    body = {"calls": [{"slot": lease.slot, "tool": "bash", "args": {"command": "echo a"}},
                      {"slot": lease.slot, "tool": "bash", "args": {"command": "echo b"}}]}  # fmt: skip
    async with (
        aiohttp.ClientSession(headers=executor.pool.auth_headers) as s,
        s.post(lease.url + "/batch", json=body) as r,
    ):
        assert [x["output"] for x in (await r.json())["results"]] == ["a\n", "b\n"]
