"""A stand-in for a trainer (no model, no GPU): registers with atroposlib's ``run-api`` and pulls batches.

It closes the ``serve`` loop on one machine, to see what a trainer would receive:

    .venv/bin/run-api --host 127.0.0.1 --port 8000 &
    python -m hermes_env.testing.scripted_vllm --port 9000 --policy terminal_tasks &
    python -m hermes_env.environments.terminal_tasks serve --env.rollout_server_url http://127.0.0.1:8000 ...
    python -m hermes_env.testing.trainer_stub --api http://127.0.0.1:8000 --batch-size 8 --batches 2

It does what a trainer does before its first step (``POST /register`` with its batch size and step count,
then ``GET /batch``, which marks the trainer as started so environments may register), polls ``/batch``
until ``--batches`` batches have arrived, prints one line per batch (groups, their scores, tokens,
trained tokens, whether logprobs came along) and checks each group's arrays line up. It waits up to
``--api-wait`` seconds for run-api to answer, then exits 0 when every batch arrived and was well formed,
1 when ``--timeout`` passed first or a batch was malformed.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

MASKED = -100


@dataclass
class BatchReport:
    """What one batch held, and what was wrong with it (``problems`` empty when well formed)."""

    groups: int = 0
    rollouts: int = 0
    tokens: int = 0
    trained_tokens: int = 0
    scores: list[list[float]] = field(default_factory=list)
    with_logprobs: int = 0
    with_advantages: int = 0
    with_distill: int = 0
    problems: list[str] = field(default_factory=list)

    def line(self, index: int) -> str:
        scores = " ".join("[" + " ".join(f"{s:g}" for s in group) + "]" for group in self.scores)
        text = (
            f"batch {index}: {self.rollouts} rollouts in {self.groups} groups, {self.tokens} tokens "
            f"({self.trained_tokens} trained), logprobs for {self.with_logprobs}/{self.rollouts}, advantages for "
            f"{self.with_advantages}, teacher top-k for {self.with_distill}, scores {scores}"
        )
        return text + ("".join(f"\n  problem: {p}" for p in self.problems))


def check_batch(batch: list[dict[str, Any]]) -> BatchReport:
    """Summarise a ``/batch`` answer and check each group: aligned arrays (advantages and distill arrays too),
    masks that are token ids or -100."""
    report = BatchReport()
    for gi, group in enumerate(batch):
        tokens, masks, scores = group.get("tokens") or [], group.get("masks") or [], group.get("scores") or []
        logprobs = group.get("inference_logprobs")
        report.groups += 1
        report.rollouts += len(tokens)
        report.scores.append([float(s) for s in scores])
        if not len(tokens) == len(masks) == len(scores):
            report.problems.append(f"group {gi}: {len(tokens)} token lists, {len(masks)} masks, {len(scores)} scores")
            continue
        for ri, (t, m) in enumerate(zip(tokens, masks, strict=True)):
            report.tokens += len(t)
            report.trained_tokens += sum(1 for x in m if x != MASKED)
            if len(t) != len(m):
                report.problems.append(f"group {gi} rollout {ri}: {len(t)} tokens but {len(m)} mask entries")
            elif any(x not in (MASKED, y) for x, y in zip(m, t, strict=True)):
                report.problems.append(f"group {gi} rollout {ri}: a mask entry is neither -100 nor its token id")
            if logprobs is not None and ri < len(logprobs) and logprobs[ri] is not None:
                report.with_logprobs += 1
                if len(logprobs[ri]) != len(t):
                    report.problems.append(f"group {gi} rollout {ri}: {len(t)} tokens but {len(logprobs[ri])} logprobs")
        report.problems.extend(f"group {gi}: {p}" for p in _per_token_problems(group, tokens, masks, report))
    return report


def _per_token_problems(
    group: dict[str, Any], tokens: list[list[int]], masks: list[list[int]], report: BatchReport
) -> list[str]:
    """``advantages`` (one finite number per token, 0.0 where untrained) and the distill arrays (one row of k
    entries per token, the filler where untrained), when the group carries them."""
    import math

    from hermes_env.distill import check_distill_arrays

    problems: list[str] = []
    advantages = group.get("advantages")
    if advantages is not None:
        report.with_advantages += len(advantages)
        if len(advantages) != len(tokens):
            problems.append(f"{len(advantages)} advantage lists for {len(tokens)} token lists")
        else:
            for ri, (adv, t, m) in enumerate(zip(advantages, tokens, masks, strict=True)):
                if len(adv) != len(t):
                    problems.append(f"rollout {ri}: {len(t)} tokens but {len(adv)} advantages")
                elif not all(isinstance(a, int | float) and math.isfinite(a) for a in adv):
                    problems.append(f"rollout {ri}: an advantage is not a finite number")
                elif any(a != 0.0 for a, x in zip(adv, m, strict=True) if x == MASKED):
                    problems.append(f"rollout {ri}: an untrained position has a non-zero advantage")
    if group.get("distill_token_ids") is not None or group.get("distill_logprobs") is not None:
        report.with_distill += len(group.get("distill_token_ids") or [])
        problems.extend(
            check_distill_arrays(tokens, masks, group.get("distill_token_ids"), group.get("distill_logprobs"))
        )
    return problems


def register(client: httpx.Client, *, batch_size: int, steps: int, max_token_len: int) -> None:
    """Register as the trainer and mark it started (the first ``/batch``), as atroposlib's trainers do."""
    response = client.post(
        "/register",
        json={
            "wandb_group": "trainer_stub",
            "wandb_project": "trainer_stub",
            "batch_size": batch_size,
            "max_token_len": max_token_len,
            "checkpoint_dir": tempfile.gettempdir(),
            "save_checkpoint_interval": -1,
            "starting_step": 0,
            "num_steps": steps,
        },
    )
    response.raise_for_status()
    client.get("/batch").raise_for_status()


def pull_batches(
    api: str,
    *,
    batch_size: int,
    batches: int,
    timeout: float,
    api_wait: float = 30,
    max_token_len: int = 32768,
    poll_interval: float = 0.5,
    out: Path | None = None,
) -> int:
    """Register (waiting up to ``api_wait`` s for run-api to answer), pull ``batches`` batches within ``timeout`` s,
    print a line per batch; the exit status (0 ok, 1 otherwise)."""
    got = 0
    malformed = 0
    with httpx.Client(base_url=api.rstrip("/"), timeout=30) as client:
        # run-api takes seconds to start, and the README starts it in the background just before this.
        api_deadline = time.monotonic() + api_wait
        waiting_said = False
        while True:
            try:
                register(client, batch_size=batch_size, steps=batches, max_token_len=max_token_len)
                break
            except httpx.TransportError as err:
                if time.monotonic() > api_deadline:
                    print(f"error: could not reach run-api at {api} within {api_wait:g}s ({err}); start it with "
                          "`.venv/bin/run-api --host 127.0.0.1 --port 8000`", file=sys.stderr)  # fmt: skip
                    return 1
                if not waiting_said:
                    print(f"trainer_stub: waiting for run-api at {api}", flush=True)
                    waiting_said = True
                time.sleep(poll_interval)
            except httpx.HTTPError as err:
                print(f"error: run-api at {api} refused the trainer's registration ({err})", file=sys.stderr)
                return 1
        deadline = time.monotonic() + timeout
        print(f"trainer_stub: registered at {api} (batch size {batch_size}); waiting for {batches} batches",
              flush=True)  # fmt: skip
        sink = out.open("a", encoding="utf-8") if out is not None else None
        try:
            while got < batches:
                if time.monotonic() > deadline:
                    print(
                        f"error: {got} of {batches} batches arrived within {timeout:g}s; is serve running with "
                        f"--env.rollout_server_url {api}? (groups whose rollouts all scored the same are dropped "
                        "unless --env.ensure_scores_are_not_same false)",
                        file=sys.stderr,
                    )
                    return 1
                batch = client.get("/batch").json().get("batch")
                if not batch:
                    time.sleep(poll_interval)
                    continue
                got += 1
                report = check_batch(batch)
                malformed += bool(report.problems)
                print(report.line(got), flush=True)
                if sink is not None:
                    sink.write(json.dumps(batch) + "\n")
        finally:
            if sink is not None:
                sink.close()
    return 1 if malformed else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hermes_env.testing.trainer_stub",
        description="A stand-in trainer: registers with atroposlib's run-api, pulls batches and reports them.",
    )
    parser.add_argument("--api", default="http://127.0.0.1:8000", help="run-api's URL (default %(default)s)")
    parser.add_argument("--batch-size", type=int, default=8, help="rollouts per batch (default %(default)s)")
    parser.add_argument("--batches", type=int, default=2, help="batches to pull before exiting (default %(default)s)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds to wait for them (default %(default)s)")
    parser.add_argument(
        "--api-wait", type=float, default=30, help="seconds to wait for run-api to answer (default %(default)s)"
    )
    parser.add_argument("--out", type=Path, default=None, help="append each batch as a JSON line to this file")
    args = parser.parse_args(argv)
    if args.batch_size < 1 or args.batches < 1:
        parser.error("--batch-size and --batches must be at least 1")
    return pull_batches(
        args.api,
        batch_size=args.batch_size,
        batches=args.batches,
        timeout=args.timeout,
        api_wait=args.api_wait,
        out=args.out,
    )


if __name__ == "__main__":
    sys.exit(main())
