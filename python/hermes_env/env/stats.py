"""Per-rollout records, their aggregates for wandb and the end-of-run summary, and readable text.

wandb is optional: nothing here imports it; :meth:`RolloutStats.wandb_table` is only called by
the environment when ``use_wandb`` is on.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from hermes_env.agent.loop import AgentResult
from hermes_env.trajectory import MASK


@dataclass(frozen=True, slots=True)
class RolloutRecord:
    """What one finished rollout contributes to the statistics."""

    score: float
    turns: int
    tool_calls: int
    tool_error_kinds: tuple[str, ...]
    trained_tokens: int
    total_tokens: int
    finished_naturally: bool
    budget_exhausted: bool
    reward_failed: bool
    context_exhausted: bool = False
    toolsets: tuple[str, ...] = ()
    end_reason: str = ""  # AgentResult.end_reason
    parse_issue_kinds: tuple[str, ...] = ()
    repeated_tool_calls: int = 0

    @classmethod
    def from_result(
        cls,
        result: AgentResult,
        *,
        score: float,
        masks: list[int],
        reward_failed: bool = False,
        toolsets: tuple[str, ...] = (),
    ) -> RolloutRecord:
        return cls(
            score=score,
            turns=result.turns_used,
            tool_calls=result.tool_calls_made,
            tool_error_kinds=tuple(e.kind for e in result.tool_errors),
            trained_tokens=sum(1 for m in masks if m != MASK),
            total_tokens=len(masks),
            finished_naturally=result.finished_naturally,
            budget_exhausted=result.budget_exhausted,
            reward_failed=reward_failed,
            context_exhausted=result.context_exhausted,
            toolsets=toolsets,
            end_reason=result.end_reason or "",
            parse_issue_kinds=tuple(p.kind for p in result.parse_issues),
            repeated_tool_calls=result.repeated_tool_calls,
        )


@dataclass
class RolloutTotals:
    """Running sums over rollouts: constant memory however long a run lasts."""

    rollouts: int = 0
    score: float = 0.0
    turns: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    finished_naturally: int = 0
    budget_exhausted: int = 0
    context_exhausted: int = 0
    reward_failures: int = 0
    trained_tokens: int = 0
    total_tokens: int = 0
    tool_error_kinds: Counter[str] = field(default_factory=Counter)
    parse_issues: int = 0
    parse_issue_kinds: Counter[str] = field(default_factory=Counter)
    repeated_tool_calls: int = 0
    end_reasons: Counter[str] = field(default_factory=Counter)

    def add(self, records: list[RolloutRecord]) -> None:
        for r in records:
            self.rollouts += 1
            self.score += r.score
            self.turns += r.turns
            self.tool_calls += r.tool_calls
            self.tool_errors += len(r.tool_error_kinds)
            self.finished_naturally += r.finished_naturally
            self.budget_exhausted += r.budget_exhausted
            self.context_exhausted += r.context_exhausted
            self.reward_failures += r.reward_failed
            self.trained_tokens += r.trained_tokens
            self.total_tokens += r.total_tokens
            self.tool_error_kinds.update(r.tool_error_kinds)
            self.parse_issues += len(r.parse_issue_kinds)
            self.parse_issue_kinds.update(r.parse_issue_kinds)
            self.repeated_tool_calls += r.repeated_tool_calls
            if r.end_reason:
                self.end_reasons[r.end_reason] += 1

    def summary(self) -> dict[str, Any]:
        """Means over rollouts (tool error kinds: errors per rollout); all 0 before the first rollout."""
        n = self.rollouts

        def mean(total: float) -> float:
            return total / n if n else 0.0

        return {
            "rollouts": n,
            "mean_reward": mean(self.score),
            "mean_turns": mean(self.turns),
            "mean_tool_calls": mean(self.tool_calls),
            "tool_errors_per_rollout": mean(self.tool_errors),
            "finished_naturally_rate": mean(self.finished_naturally),
            "budget_exhausted_rate": mean(self.budget_exhausted),
            "context_exhausted_rate": mean(self.context_exhausted),
            "reward_failures": self.reward_failures,
            "trained_tokens": self.trained_tokens,
            "total_tokens": self.total_tokens,
            "tool_error_kinds": {k: v / n for k, v in sorted(self.tool_error_kinds.items())} if n else {},
            "parse_issues_per_rollout": mean(self.parse_issues),
            "parse_issue_kinds": {k: v / n for k, v in sorted(self.parse_issue_kinds.items())} if n else {},
            "repeated_tool_calls_per_rollout": mean(self.repeated_tool_calls),
            "end_reasons": dict(sorted(self.end_reasons.items())),
        }


@dataclass
class RolloutStats:
    """Accumulates records; ``drain_metrics`` empties the window used for one wandb step.

    Constant memory however long a run lasts: the window is running sums, not the records themselves, and
    only the last ``keep_readable`` readable conversations are kept.
    """

    window: RolloutTotals = field(default_factory=RolloutTotals)
    totals: RolloutTotals = field(default_factory=RolloutTotals)
    groups: int = 0
    groups_dropped: int = 0
    dropped_by_cause: Counter[str] = field(default_factory=Counter)  # failure kind of each dropped group
    readable: list[tuple[str, float]] = field(default_factory=list)
    keep_readable: int = 32

    def add_group(self, records: list[RolloutRecord]) -> None:
        self.groups += 1
        self.window.add(records)
        self.totals.add(records)

    def drop_group(self, cause: str) -> None:
        """A group was dropped because a rollout failed with ``cause`` (a failure kind)."""
        self.groups_dropped += 1
        self.dropped_by_cause[cause] += 1

    def add_readable(
        self, messages: list[dict[str, Any]], score: float, metadata: dict[str, Any] | None = None
    ) -> None:
        text = render_conversation(messages)
        if metadata:
            text += "\n[score metadata] " + json.dumps(metadata, ensure_ascii=False, default=str)
        self.readable.append((text, score))
        del self.readable[: -self.keep_readable]

    def drain_metrics(self) -> dict[str, float]:
        window, self.window = self.window, RolloutTotals()
        if not window.rollouts:
            return {}
        metrics = window.summary()
        out = {f"train/{k}": v for k, v in metrics.items() if not isinstance(v, dict)}
        for kind, rate in metrics["tool_error_kinds"].items():
            out[f"train/tool_errors/{kind}"] = rate
        for kind, rate in metrics["parse_issue_kinds"].items():
            out[f"train/parse_issues/{kind}"] = rate
        for reason, count in metrics["end_reasons"].items():
            out[f"train/end_reason/{reason}"] = count / window.rollouts
        return out

    def dropped_metrics(self) -> dict[str, float]:
        """Groups dropped so far, in total and by cause (``train/groups_dropped/<kind>``)."""
        out = {"train/groups_dropped": float(self.groups_dropped)}
        out.update({f"train/groups_dropped/{cause}": float(n) for cause, n in self.dropped_by_cause.items()})
        return out

    def summary(self) -> dict[str, Any]:
        return {
            "groups": self.groups,
            "groups_dropped": self.groups_dropped,
            "groups_dropped_by_cause": dict(self.dropped_by_cause.most_common()),
            **self.totals.summary(),
        }


def summarize(records: list[RolloutRecord]) -> dict[str, Any]:
    """Means over ``records`` (tool error kinds: errors per rollout)."""
    totals = RolloutTotals()
    totals.add(records)
    return totals.summary()


def render_conversation(messages: list[dict[str, Any]]) -> str:
    """A conversation as plain text: roles, reasoning, content, tool calls and results."""
    lines = []
    for message in messages:
        role = message.get("role", "?")
        if message.get("reasoning_content"):
            lines.append(f"[{role} reasoning] {message['reasoning_content']}")
        if message.get("content"):
            lines.append(f"[{role}] {message['content']}")
        for call in message.get("tool_calls") or []:
            function = call.get("function", {})
            lines.append(f"[{role} -> {function.get('name')}] {function.get('arguments')}")
    return "\n".join(lines)


def wandb_table(readable: list[tuple[str, float]]) -> Any:
    """A wandb.Table of readable rollouts (wandb imported only here)."""
    import wandb

    table = wandb.Table(columns=["conversation", "score"])
    for text, score in readable:
        table.add_data(text, score)
    return table


def format_summary_table(summary: dict[str, Any], *, elapsed: float | None = None) -> str:
    """The end-of-run table printed by process mode."""
    dropped = f"{summary['groups_dropped']}"
    causes = summary.get("groups_dropped_by_cause") or {}
    if causes:
        dropped += " (" + ", ".join(f"{cause} {n}" for cause, n in causes.items()) + ")"
    rows = [
        ("groups written", f"{summary['groups']}"),
        ("groups dropped", dropped),
        ("rollouts", f"{summary['rollouts']}"),
        ("mean reward", f"{summary['mean_reward']:.3f}"),
        ("mean turns", f"{summary['mean_turns']:.2f}"),
        ("tool calls / rollout", f"{summary['mean_tool_calls']:.2f}"),
        ("tool errors / rollout", f"{summary['tool_errors_per_rollout']:.2f}"),
        ("finished naturally", f"{100 * summary['finished_naturally_rate']:.0f}%"),
        ("reward failures", f"{summary['reward_failures']}"),
        ("trained tokens", f"{summary['trained_tokens']} of {summary['total_tokens']}"),
    ]
    if summary["tool_error_kinds"]:
        rows.append(("tool error kinds", json.dumps(summary["tool_error_kinds"])))
    if "parse_issues_per_rollout" in summary:
        rows.append(("parse issues / rollout", f"{summary['parse_issues_per_rollout']:.2f}"))
        if summary["parse_issue_kinds"]:
            rows.append(("parse issue kinds", json.dumps(summary["parse_issue_kinds"])))
        rows.append(("repeat calls / rollout", f"{summary['repeated_tool_calls_per_rollout']:.2f}"))
    if summary.get("end_reasons"):
        rows.append(("end reasons", ", ".join(f"{r} {n}" for r, n in summary["end_reasons"].items())))
    if elapsed is not None:
        rows.append(("elapsed", f"{elapsed:.1f}s"))
    return format_table(rows)


def format_table(rows: list[tuple[str, str]]) -> str:
    """Label/value rows between two rules, labels aligned (the end-of-run tables)."""
    width = max(len(k) for k, _ in rows)
    body = "\n".join(f"  {k.ljust(width)}  {v}" for k, v in rows)
    rule = "-" * (width + 4 + max(len(v) for _, v in rows))
    return f"{rule}\n{body}\n{rule}"
