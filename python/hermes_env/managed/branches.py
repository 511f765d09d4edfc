"""Branch bookkeeping: which tracked conversation a request continues, and what the model produced."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hermes_env.managed.rendering import RenderState
from hermes_env.trajectory import Trajectory

# A message's identity for prefix matching: ("generated", {completion ids it may be}) for an
# assistant reply this server produced, ("message", canonical json) for anything else.
MessageKey = tuple[str, Any]


@dataclass(frozen=True)
class CompletionRecord:
    """One sample exactly as the model produced it."""

    cid: int
    token_ids: tuple[int, ...]
    raw_text: str  # decoded with special tokens, without a trailing end-of-turn token
    produced_end: str | None  # the trailing special token's text (e.g. "<|im_end|>"), if generated
    finish_reason: str


@dataclass
class ManagedBranch:
    """One rollout branch: its trajectory and the conversation so far.

    Also readable like atroposlib's ``SequenceNode`` (``tokens``, ``masked_tokens``,
    ``logprobs``, ``full_text``, ``metadata``) so code written for its ``get_state()`` works.
    """

    trajectory: Trajectory
    messages: list[dict[str, Any]]
    keys: list[MessageKey]
    completion_ids: list[int] = field(default_factory=list)
    restarted: list[ManagedBranch] = field(default_factory=list)  # sequences closed by warn_and_restart
    version: int = 0
    decode: Callable[[list[int]], str] | None = None
    text: str | None = None  # completion() branches: prompt + returned text, matched by prefix
    # Incremental turns (managed.rendering): how to render the next turn without the whole conversation,
    render: RenderState | None = None
    # and the trajectory's tokens as the list sent to the server (extended in place, never re-built).
    ids: list[int] = field(default_factory=list)
    sending: bool = False  # a request on ``ids`` is in flight

    @property
    def tokens(self) -> list[int]:
        return self.trajectory.tokens

    @property
    def masked_tokens(self) -> list[int]:
        return self.trajectory.masks

    @property
    def masks(self) -> list[int]:
        return self.trajectory.masks

    @property
    def logprobs(self) -> list[float]:
        return self.trajectory.logprobs

    @property
    def full_text(self) -> str:
        return self.decode(self.trajectory.tokens) if self.decode else ""

    @property
    def metadata(self) -> dict[str, Any]:
        return {"finish_reason": self.trajectory.last_finish_reason, "restarts": len(self.restarted)}

    def to_scored_item(self, score: float, **extra: Any) -> dict[str, Any]:
        """The trajectory as an atroposlib ScoredDataItem dict, with this branch's messages."""
        return self.trajectory.to_scored_item(score, messages=self.messages, **extra)


def canonical(message: Mapping[str, Any]) -> str:
    return json.dumps(message, sort_keys=True, ensure_ascii=False, default=str)


def keys_match(branch_key: MessageKey, request_key: MessageKey) -> bool:
    if branch_key[0] == "generated" and request_key[0] == "generated":
        return bool(branch_key[1] & request_key[1])
    return branch_key == request_key


def continues(branch: ManagedBranch, keys: list[MessageKey]) -> bool:
    """Whether a request with message ``keys`` continues ``branch`` (its whole conversation)."""
    n = len(branch.keys)
    return (
        branch.text is None
        and n < len(keys)
        and all(keys_match(b, r) for b, r in zip(branch.keys, keys[:n], strict=True))
    )
