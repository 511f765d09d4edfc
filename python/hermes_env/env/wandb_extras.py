"""Two wandb additions: hermes-agent's tool-error keys, and the numbers in score metadata.

- ``train/tool_errors_count`` (tool errors since the last log, 0 when none) and
  ``train/tool_error_details`` (one ``[turn N] tool(args) -> error`` line each, cut as hermes-agent
  cuts them), next to hermes_env's per-kind ``train/tool_errors/<kind>`` rates;
- ``train/score_metadata/<key>``: the mean of each numeric (or boolean) value that
  ``verify_and_score_trajectory`` returned in its metadata since the last log.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

# hermes-agent keeps each error's arguments/error cut to these lengths, and prints them cut shorter.
ARGS_KEPT, ERROR_KEPT = 150, 300
ARGS_SHOWN, ERROR_SHOWN = 80, 150


@dataclass
class ToolErrorLog:
    """Tool errors since the last wandb step (bounded: only the count grows past ``max_details``)."""

    max_details: int = 200
    count: int = 0
    details: list[str] = field(default_factory=list)

    def add(self, errors: Iterable[Any]) -> None:
        for err in errors:
            self.count += 1
            if len(self.details) < self.max_details:
                args = str(err.arguments)[:ARGS_KEPT][:ARGS_SHOWN]
                text = str(getattr(err, "error", err.message))[:ERROR_KEPT][:ERROR_SHOWN]
                # hermes-agent numbers turns from 1; the loop's ToolError.turn counts from 0.
                self.details.append(f"[turn {err.turn + 1}] {err.tool_name}({args}) -> {text}")

    def drain_metrics(self) -> dict[str, Any]:
        metrics: dict[str, Any] = {"train/tool_errors_count": self.count}
        if self.count:
            shown = self.details + (
                [f"... and {self.count - len(self.details)} more"] if self.count > len(self.details) else []
            )
            metrics["train/tool_error_details"] = "\n".join(shown)
        self.count, self.details = 0, []
        return metrics


@dataclass
class ScoreMetadataLog:
    """Sums of the numeric score-metadata values since the last wandb step."""

    sums: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    counts: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def add(self, metadata: dict[str, Any] | None) -> None:
        for key, value in (metadata or {}).items():
            if isinstance(value, bool | int | float) and math.isfinite(float(value)):
                self.sums[key] += float(value)
                self.counts[key] += 1

    def drain_metrics(self) -> dict[str, float]:
        metrics = {f"train/score_metadata/{k}": self.sums[k] / n for k, n in sorted(self.counts.items()) if n}
        self.sums, self.counts = defaultdict(float), defaultdict(int)
        return metrics
