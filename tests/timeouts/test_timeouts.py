"""One time budget per tool call (``hermes_env.timeouts``): every layer's clamp is the one ``clamp_timeout``, and
each layer's limit derives from the call's timeout as the table in the module's docstring says."""

from __future__ import annotations

import pytest
from hermes_env.backends.local import LocalBackend
from hermes_env.slot_pool.config import ExecutorConfig
from hermes_env.timeouts import (
    RESULT_WAIT_GRACE_S,
    TOOL_GRACE_S,
    TRANSPORT_GRACE_S,
    CallBudget,
    clamp_timeout,
)
from hermes_env.tools.registry import ToolCallContext
from hypothesis import assume, given
from hypothesis import strategies as st

seconds = st.floats(min_value=0.01, max_value=10_000, allow_nan=False)
asked = st.none() | seconds


@given(timeout=seconds, extra=st.floats(min_value=0, max_value=10_000), requested=asked)
def test_a_rollouts_tool_calls_get_the_same_limits_as_before(timeout: float, extra: float, requested: float | None):
    # The limits ToolCallContext gave before it used clamp_timeout: the default, else the ask within [1 s, max].
    ctx = ToolCallContext(task_id="t", backend=LocalBackend.__new__(LocalBackend), timeout=timeout,
                         max_timeout=timeout + extra)  # fmt: skip
    limit = timeout + extra
    before = min(timeout, limit) if requested is None else max(1.0, min(requested, limit))
    assert ctx.clamp_timeout(requested) == before


@given(default=seconds, low=seconds, high=seconds, requested=asked)
def test_the_executor_gets_the_same_limits_as_before(default: float, low: float, high: float, requested: float | None):
    assume(low <= high)
    config = ExecutorConfig(default_timeout_s=default, min_timeout_s=low, max_timeout_s=high)
    value = default if requested is None else requested
    assert config.clamp_timeout(requested) == min(max(value, low), high)
    budget = config.budget(requested)
    assert budget.timeout == config.clamp_timeout(requested)
    assert budget.transport_limit == budget.timeout + config.transport_grace_s
    assert budget.result_wait == budget.timeout + config.transport_grace_s + RESULT_WAIT_GRACE_S


@given(default=seconds, high=seconds, requested=asked)
def test_the_tool_server_clamp_is_the_same(default: float, high: float, requested: float | None) -> None:
    assert clamp_timeout(requested, default=default, maximum=high) == min(requested or default, high)


@given(timeout=seconds, remaining=st.floats(min_value=-10, max_value=10_000))
def test_the_pool_is_a_safety_net_past_the_tools_own_limit(timeout: float, remaining: float) -> None:
    budget = CallBudget(timeout)
    assert budget.pool_limit() == timeout + TOOL_GRACE_S > budget.timeout
    assert budget.pool_limit(remaining) == min(timeout + TOOL_GRACE_S, remaining)
    assert budget.transport_limit == timeout + TRANSPORT_GRACE_S
    assert budget.result_wait > budget.transport_limit > budget.timeout


def test_defaults_come_from_one_place() -> None:
    assert ExecutorConfig().transport_grace_s == TRANSPORT_GRACE_S
    with pytest.raises(ValueError, match="timeout must be positive"):
        CallBudget(0)
