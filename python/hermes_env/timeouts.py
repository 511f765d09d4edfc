"""One time budget per tool call, and how every layer under the call derives its limit from it.

A call's limit is decided once, by :func:`clamp_timeout`: what the model asked for (or the configured default
when it asked for none), raised to a floor and capped at the most a call may get. ``terminal_timeout`` is both the
default and the cap of a rollout's tool calls (``ToolCallContext``); the slot pool's executor and the tool server
apply their own default/floor/cap (``ExecutorConfig``, ``ToolServerConfig``) with the same function.

From that timeout, :class:`CallBudget` derives each layer's limit; each later layer is a safety net for a layer
that failed to stop in time, never the limit that normally applies:

============================================  ==========================================================
layer                                          limit
============================================  ==========================================================
the command (``run_limited``, the sandbox      ``timeout``: the command's process tree is killed and its
worker, a container's channel)                 partial output returned; reading the rest of its output
                                               after the kill takes at most :data:`DRAIN_GRACE_S`
the HTTP request to a sandbox worker or the    ``timeout + transport_grace`` (:data:`TRANSPORT_GRACE_S`,
tool server (``ToolExecutor``)                 ``ExecutorConfig.transport_grace_s``)
the executor's wait for a queued result        ``timeout + transport_grace + RESULT_WAIT_GRACE_S``
the agent loop's tool pool                     ``tool_timeout + tool_grace`` (:data:`TOOL_GRACE_S`; the
(``ToolWorkerPool.run``)                       loop's ``tool_timeout`` is the cap, ``terminal_timeout``),
                                               cut to what is left of ``rollout_timeout``
============================================  ==========================================================

(The docker backend adds its engine's own grace to ``timeout`` for a call through ``docker exec``; the sandbox
worker waits for tmux ``timeout`` plus 10 s.)
"""

from __future__ import annotations

from dataclasses import dataclass

#: The agent loop's tool pool stops a call this long after its timeout, for a tool that failed to stop itself.
TOOL_GRACE_S = 5.0
#: An HTTP request to a sandbox worker (or the tool server) may take this long beyond the call's timeout.
TRANSPORT_GRACE_S = 10.0
#: The executor's wait for a queued call's result, beyond the transport's limit (a result that is never settled).
RESULT_WAIT_GRACE_S = 30.0
#: Reading a killed command's remaining output takes at most this long.
DRAIN_GRACE_S = 2.0


def clamp_timeout(requested: float | None, *, default: float, maximum: float, minimum: float = 0.0) -> float:
    """The timeout a call gets: ``default`` (at most ``maximum``) when it asks for none, else what it asked for
    within [``minimum``, ``maximum``] (``minimum`` wins should a caller set it above ``maximum``)."""
    if requested is None:
        return min(default, maximum)
    return max(min(float(requested), maximum), minimum)


@dataclass(frozen=True)
class CallBudget:
    """One tool call's timeout and the limits derived from it (see the module docstring for the table)."""

    timeout: float
    transport_grace: float = TRANSPORT_GRACE_S
    tool_grace: float = TOOL_GRACE_S

    def __post_init__(self) -> None:
        if self.timeout <= 0:
            raise ValueError(f"a tool call's timeout must be positive, got {self.timeout}")

    @property
    def transport_limit(self) -> float:
        """The HTTP request that carries the call to a sandbox worker or the tool server."""
        return self.timeout + self.transport_grace

    @property
    def result_wait(self) -> float:
        """The executor's wait for the call's result."""
        return self.transport_limit + RESULT_WAIT_GRACE_S

    def pool_limit(self, remaining: float | None = None) -> float:
        """The agent loop's tool pool, cut to ``remaining`` seconds of the rollout when given."""
        limit = self.timeout + self.tool_grace
        return limit if remaining is None else min(limit, remaining)
