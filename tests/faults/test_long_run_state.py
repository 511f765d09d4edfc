"""What a long ``process`` run keeps: nothing that grows with every group (histories are emptied each step)."""

from __future__ import annotations

from typing import Any


async def test_nothing_kept_per_group_grows_over_a_process_run(
    scripted_server: Any, process_env: Any, solution_policy: Any
) -> None:
    server = scripted_server(solution_policy.vllm_responder)
    env = process_env(server, groups=6, group_size=2)
    await env.process_manager()
    assert env.rollout_stats.groups == 6 and env.rollout_stats.totals.rollouts == 12  # the totals are kept
    # ... but no list that gets one entry per rollout or per request outlives its step
    assert env.rollout_stats.window.rollouts == 0
    assert env.completion_lengths == []
    for api_server in env.server.servers:
        assert api_server.request_timings == [] and api_server.attempts_list == []
    assert len(env.rollout_stats.readable) <= env.rollout_stats.keep_readable
    assert env.tool_error_log.count == 0 and env.tool_error_log.details == []
