"""How an environment is driven: atroposlib's ``serve`` / ``process`` / ``evaluate`` managers, hardened.

- every mode first checks that the terminal backend can start and the inference server answers
  (one ``error:`` line otherwise, instead of a run that waits forever);
- ``process`` keeps up to ``process_concurrency`` groups in flight, writes each complete group as
  one jsonl line, shows a progress bar (groups done of total, mean reward), stops cleanly after
  ``max_failed_groups_in_a_row`` dropped groups, and ends with the HTML view and a summary table
  (groups dropped by cause). Ctrl-C (or SIGTERM) stops it the same way: groups in flight are
  cancelled and their workspaces cleaned, the summary is printed, then one line
  (``interrupted after N groups; <file> holds N whole groups``) and exit status 130;
- ``serve`` stops on SIGTERM as on Ctrl-C: groups in flight are cancelled, the backend is closed (workspaces,
  workers, containers), exit status 143;
- ``evaluate`` runs each item once and saves ``metrics.json``/``samples.jsonl`` with ``evaluate_log``;
- wandb stays optional: in ``process``/``evaluate`` it is used only when a login exists.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import logging
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from atroposlib.envs.base import ScoredDataGroup
from atroposlib.envs.server_handling.server_harness import ServerHarness

from hermes_env.env.preflight import check_servers
from hermes_env.env.progress import GroupProgress
from hermes_env.env.stats import RolloutRecord, format_summary_table, format_table, summarize
from hermes_env.errors import DatasetError, EnvSetupError, InferenceServerUnreachable, RolloutFailed

logger = logging.getLogger(__name__)

#: Groups ``process`` writes when ``total_steps`` is -1 (the default of HermesAgentBaseEnv.config_init).
PROCESS_DEFAULT_GROUPS = 8

#: Set by ``process`` around each group's ``collect_trajectories``: the environment notes there that it dropped the
#: group (a rollout failed). A group that comes back empty without that note was skipped by the environment's own
#: ``collect_trajectories`` (an evaluation-only environment returns ``None, []``): not a failure.
GROUP_DROPPED: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "hermes_env_group_dropped", default=None
)

# One evaluated item: (item, scored item or None, its record or None, why it failed or None).
EvalOutcome = tuple[Any, dict[str, Any] | None, RolloutRecord | None, str | None]


async def _already_set_up() -> None:
    """Stands in for ``setup`` once it has run (atroposlib's managers call it again)."""


def _wandb_configured() -> bool:
    """Whether wandb can log without prompting: an API key, an offline/disabled mode, or a netrc login."""
    if os.environ.get("WANDB_API_KEY") or os.environ.get("WANDB_MODE") in ("offline", "disabled", "dryrun"):
        return True
    netrc = Path(os.environ.get("NETRC", Path.home() / ".netrc"))
    try:
        return "api.wandb.ai" in netrc.read_text()
    except OSError:
        return False


def _drop_waiting_for_trainer(record: logging.LogRecord) -> bool:
    return not str(record.msg).startswith("Waiting to register the env")


def _asked_for_wandb(argv: list[str]) -> bool:
    """Whether the command line itself turns wandb on (``--env.use_wandb true``)."""
    for i, arg in enumerate(argv):
        value = arg.split("=", 1)[1] if arg.startswith("--env.use_wandb=") else None
        if arg == "--env.use_wandb" and i + 1 < len(argv):
            value = argv[i + 1]
        if value is not None:
            return value.strip().lower() in ("true", "1", "yes", "on")
    return False


# Failure causes that point at the tool backend rather than the inference server (for the stop message's hint).
_BACKEND_CAUSES = frozenset({"sandbox_failed", "workspace_setup_failed"})


def _saved_eval_files(where: Path, metrics: dict[str, Any], started_at: float) -> str:
    """Name the eval files this run wrote. An environment whose ``evaluate()`` returns its metrics without
    calling ``evaluate_log`` (hermes-agent's do) wrote none: its metrics are saved here, and the missing
    samples are said, not claimed."""

    def fresh(name: str) -> bool:
        path = where / name
        return path.is_file() and path.stat().st_mtime >= started_at - 1

    if not fresh("metrics.json"):
        where.mkdir(parents=True, exist_ok=True)
        (where / "metrics.json").write_text(json.dumps(metrics, indent=2, default=str) + "\n", encoding="utf-8")
    saved = [str(where / name) for name in ("metrics.json", "samples.jsonl") if fresh(name)]
    note = "" if fresh("samples.jsonl") else " (the environment's evaluate() wrote no samples.jsonl)"
    return f"saved: {' and '.join(saved)}{note}"


class RunModesMixin:
    """serve/process/evaluate for :class:`~hermes_env.env.base_env.HermesAgentBaseEnv` (mixed in before BaseEnv)."""

    async def run_eval(self, items: list[Any]) -> list[EvalOutcome]:
        """One rollout per item (eval split, at most ``max_eval_workers`` at once): (item, scored, record, error)."""
        gate = asyncio.Semaphore(self.config.max_eval_workers)

        async def one(item: Any) -> EvalOutcome:
            async with gate:
                try:
                    scored, record = await self.rollout(item, self.resolve_group_tools(), 0, split="eval")
                except RolloutFailed as err:
                    return item, None, None, f"{err.kind}: {err}"
                return item, scored, record, None

        return list(await asyncio.gather(*(one(item) for item in items)))

    async def evaluate_items(
        self,
        items: list[Any],
        *,
        id_field: str = "id",
        extra_metrics: Callable[[list[EvalOutcome]], dict[str, float]] | None = None,
    ) -> dict[str, float]:
        """Run ``items`` once each (eval split) and save ``metrics.json``/``samples.jsonl`` via ``evaluate_log``.

        ``extra_metrics(outcomes) -> dict`` may add environment-specific metrics.
        """
        started = time.time()
        outcomes = await self.run_eval(items)
        records = [record for _, _, record, _ in outcomes if record is not None]
        stats = summarize(records)
        metrics = {
            "eval/accuracy": sum(r.score for r in records) / len(outcomes) if outcomes else 0.0,
            "eval/items": float(len(outcomes)),
            "eval/failed_rollouts": float(sum(1 for *_, err in outcomes if err is not None)),
            "eval/mean_turns": stats["mean_turns"],
            "eval/mean_tool_calls": stats["mean_tool_calls"],
            "eval/tool_errors_per_rollout": stats["tool_errors_per_rollout"],
            "eval/finished_naturally_rate": stats["finished_naturally_rate"],
        }
        if extra_metrics is not None:
            metrics.update(extra_metrics(outcomes))
        samples = [
            {
                "id": item.get(id_field) if isinstance(item, dict) else None,
                "score": record.score if record else None,
                "turns": record.turns if record else 0,
                "tool_calls": record.tool_calls if record else 0,
                "tool_errors": list(record.tool_error_kinds) if record else [],
                "parse_issues": list(record.parse_issue_kinds) if record else [],
                "end_reason": record.end_reason if record else "failed",
                "error": err,
                "messages": scored["messages"] if scored else None,
            }
            for item, scored, record, err in outcomes
        ]
        self.last_eval_metrics = metrics
        if self.config.data_dir_to_save_evals is not None:
            await self.evaluate_log(metrics, start_time=started, end_time=time.time(), samples=samples, verbose=False)
        if self.config.use_wandb:
            import wandb

            wandb.log(metrics, step=self.curr_step)
        return metrics

    # ------------------------------------------------------------------ run modes
    async def preflight(self, *, wait_forever: bool = False) -> None:
        """Fail fast, with a message, when the backend cannot start or an inference server does not answer
        (``wait_forever``: keep waiting for the server, warning every 30 s)."""
        probe = f"preflight-{os.getpid()}"
        try:
            # Open and drop one workspace: a slot pool starts its workers here (a missing Ray cluster, a
            # worker that cannot start) instead of failing every rollout of the run.
            await self.backend.start(probe)
            await self.backend.cleanup(probe)
        except Exception as err:  # noqa: BLE001 - unknown name, bwrap missing, bad options: all user-fixable
            raise EnvSetupError(f"terminal backend {self.config.terminal_backend!r} cannot be used: {err}") from err
        await self.connect_tool_server()
        # atroposlib's ServerHarness (its test stand-in for a server) has nothing to probe.
        if not getattr(self.server, "servers", None) or isinstance(self.server.servers[0], ServerHarness):
            return
        try:
            await check_servers(self.server, wait=None if wait_forever else self.config.server_check_timeout)
        except InferenceServerUnreachable as err:
            raise EnvSetupError(str(err)) from None

    async def _setup_or_exit(self, *, wait_for_server: bool = False) -> None:
        try:
            await self.preflight(wait_forever=wait_for_server)
            await self.setup()
        except (EnvSetupError, DatasetError) as err:
            await self.close()
            raise SystemExit(f"error: {err}") from None

    async def env_manager(self) -> None:
        # serve: the inference server may still be loading its model; wait for it (with reminders).
        await self._setup_or_exit(wait_for_server=True)
        # atroposlib logs "Waiting to register the env ..." every second until a trainer registers; say it once.
        logging.getLogger().addFilter(_drop_waiting_for_trainer)
        print(
            f"serve: registering with run-api at {self.config.rollout_server_url} (this waits until a trainer has "
            "registered there; python -m hermes_env.testing.trainer_stub stands in for one)",
            file=sys.stderr,
            flush=True,
        )
        setup, self.setup = self.setup, _already_set_up  # type: ignore[method-assign]
        main = asyncio.current_task()
        loop = asyncio.get_running_loop()
        terminated = False

        def on_sigterm() -> None:
            # SIGTERM's default would end the process at once, leaving the backend's workspaces, slot-pool
            # workers' run directory and containers to the next run's sweep; stop as Ctrl-C does instead.
            nonlocal terminated
            terminated = True
            if main is not None:
                main.cancel()

        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signal.SIGTERM, on_sigterm)
        try:
            await super().env_manager()
        except asyncio.CancelledError:
            if not terminated or main is None:
                raise
            main.uncancel()  # finish cleaning up normally, then exit 143 (128 + SIGTERM)
        finally:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(signal.SIGTERM)
            self.setup = setup  # type: ignore[method-assign]
            # atroposlib's rollout tasks are not children of this one: cancel them before the backend closes
            # under them (they would fail as dropped groups instead of ending as cancelled).
            workers = [t for t in getattr(self, "workers", ()) if isinstance(t, asyncio.Task) and not t.done()]
            for task in workers:
                task.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            await self.stop_run_api_link()  # type: ignore[attr-defined]
            await self.close()
        if terminated:
            print("serve: stopped by SIGTERM; its workspaces were cleaned up", file=sys.stderr, flush=True)
            raise SystemExit(143)

    async def _run_evaluate(self) -> None:
        await self._setup_or_exit()
        self._init_process_wandb()
        started, started_at = time.monotonic(), time.time()
        try:
            returned = await self.evaluate()
        finally:
            await self.close()
        metrics = returned if isinstance(returned, dict) else getattr(self, "last_eval_metrics", None)
        self._report_eval(metrics, time.monotonic() - started, started_at)

    def _report_eval(self, metrics: dict[str, Any] | None, elapsed: float, started_at: float) -> None:
        """``evaluate``'s results on stdout, and which files this run saved (or how to save them)."""
        if not metrics:
            print("evaluate: the environment's evaluate() reported no metrics (evaluate_items returns them)")
            return
        rows = [(k, f"{v:.4g}" if isinstance(v, float) else str(v)) for k, v in metrics.items()]
        print(format_table([*rows, ("elapsed", f"{elapsed:.1f}s")]))
        where = self.config.data_dir_to_save_evals
        if where is None:
            print("not saved: pass --env.data_dir_to_save_evals DIR to keep metrics.json and samples.jsonl")
        else:
            print(_saved_eval_files(Path(where), metrics, started_at))
        sys.stdout.flush()

    async def close(self) -> None:
        """Release the backend and close the jsonl (idempotent)."""
        if self.jsonl_writer is not None:
            self.jsonl_writer.close()
        if self._backend is not None:
            backend, self._backend = self._backend, None
            await backend.aclose()
        await self.disconnect_tool_server()

    def _init_process_wandb(self) -> None:
        """wandb for process/evaluate (no trainer to ask for a project): only when a login exists.

        atroposlib turns ``use_wandb`` on for these modes whatever the configuration says; without a
        login that is silently undone, and only a user who asked for wandb on the command line is warned.
        """
        if not self.config.use_wandb:
            return
        if not _wandb_configured():
            if _asked_for_wandb(sys.argv):
                logger.warning(
                    "--env.use_wandb is on but no wandb login was found (WANDB_API_KEY, WANDB_MODE or ~/.netrc): "
                    "continuing without wandb"
                )
            self.config.use_wandb = False
            return
        import wandb

        wandb.init(project=self.wandb_project, group=self.wandb_group, name=self.name, config=self.config.model_dump())

    async def process_manager(self) -> None:
        """``process``: ``total_steps`` complete groups to jsonl + HTML, with a progress bar and a summary."""
        await self._setup_or_exit()
        self._init_process_wandb()
        # total_steps=-1 means "as many as the trainer asks" (serve); with no trainer, a short run.
        total = self.n_groups_to_process if self.n_groups_to_process > 0 else PROCESS_DEFAULT_GROUPS
        self.config.group_size = self.group_size_to_process
        if self.max_token_len <= 0:
            self.max_token_len = self.config.max_token_length  # no trainer: use our own limit
        self.curr_step = 0
        failures_in_a_row = 0
        started = time.monotonic()
        progress = GroupProgress(total=total, desc=self.name or type(self).__name__)
        stop_reason = None
        interrupted = False
        pending: set[asyncio.Task[tuple[Any, ScoredDataGroup | None]]] = set()
        out_of_items = False
        self.groups_skipped = 0  # items the environment's collect_trajectories returned no group for, by design

        async def one_group(item: Any) -> tuple[Any, ScoredDataGroup | None, bool]:
            dropped: list[str] = []
            GROUP_DROPPED.set(dropped)
            group, _ = await self.collect_trajectories(item)
            if group is not None:
                group = await self.postprocess_histories(group)
            return item, group, bool(dropped) or group is not None

        main = asyncio.current_task()
        loop = asyncio.get_running_loop()
        # SIGTERM stops the run like Ctrl-C does (asyncio.run already turns Ctrl-C into a cancellation).
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signal.SIGTERM, main.cancel if main is not None else lambda: None)
        try:
            while self.curr_step + self.groups_skipped < total and stop_reason is None:
                # Keep up to process_concurrency groups in flight, never more than the groups still needed.
                while (
                    not out_of_items
                    and len(pending) < self.config.process_concurrency
                    and self.curr_step + self.groups_skipped + len(pending) < total
                ):
                    item = await self.get_next_item()
                    if item is None:
                        out_of_items = True
                        break
                    pending.add(asyncio.create_task(one_group(item)))
                if not pending:
                    stop_reason = "the dataset ran out of items" if out_of_items else None
                    break
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    item, group, counted = task.result()
                    if not group and not counted:
                        self.groups_skipped += 1
                        continue
                    if not group:
                        failures_in_a_row += 1
                        progress.dropped(self.rollout_stats.groups_dropped)
                        if failures_in_a_row >= self.config.max_failed_groups_in_a_row:
                            causes = ", ".join(self.rollout_stats.dropped_by_cause) or "unknown"
                            backend_only = set(self.rollout_stats.dropped_by_cause) <= _BACKEND_CAUSES
                            hint = (
                                "the tool backend (see the first warning)"
                                if backend_only
                                else "the inference server and --env.rollout_timeout"
                            )
                            stop_reason = (
                                f"{failures_in_a_row} groups in a row were dropped ({causes}); the last because: "
                                f"{getattr(self, 'last_drop_reason', None) or 'see the warnings above'}. Check {hint}"
                            )
                        continue
                    failures_in_a_row = 0
                    await self._write_group(item, group, progress)
        except asyncio.CancelledError:
            if main is None or not main.cancelling():
                raise  # not a stop request for this run
            main.uncancel()  # finish cleaning up normally, then exit with 130
            interrupted = True
        finally:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(signal.SIGTERM)
            for task in pending:
                task.cancel()
            finished = await asyncio.gather(*pending, return_exceptions=True)
            if interrupted:  # groups that completed as the stop came are whole: keep them
                for outcome in finished:
                    if isinstance(outcome, tuple) and outcome[1]:
                        await self._write_group(outcome[0], outcome[1], progress)
            progress.close()
            await self.close()
        self._report(started, stop_reason, interrupted=interrupted)

    async def _write_group(self, item: Any, group: ScoredDataGroup, progress: GroupProgress) -> None:
        """One complete group, one whole jsonl line."""
        await self.handle_send_to_api(group, item, do_send_to_api=False, abort_on_any_max_length_exceeded=False)
        # Every group, as atroposlib's process does, with or without wandb (it logs only when use_wandb is on):
        # wandb_log also empties what a step gathers (the servers' request timings, completion lengths, rollout
        # statistics), which would otherwise grow with every group of the run.
        await self.wandb_log()
        self.curr_step += 1
        progress.advance(self.rollout_stats.summary()["mean_reward"], self.rollout_stats.groups_dropped)

    def _report(self, started: float, stop_reason: str | None, *, interrupted: bool = False) -> None:
        path = self.config.data_path_to_save_groups
        summary = self.rollout_stats.summary()
        out = sys.stdout
        print(format_summary_table(summary, elapsed=time.monotonic() - started), file=out)
        written = self.jsonl_writer.lines_written if self.jsonl_writer is not None else 0
        if path and written > 0:
            from hermes_env.html_view import write_html

            html = write_html(path, tokenizer=self.tokenizer)
            print(f"scored groups: {path}\nhtml view:     {html}", file=out)
        if stop_reason:
            print(f"stopped early: {stop_reason}", file=out)
        out.flush()
        if interrupted:
            held = f"{path} holds {written} whole groups" if path and written else "nothing was written"
            print(f"interrupted after {written} groups; {held}", file=sys.stderr, flush=True)
            raise SystemExit(130)
        skipped = getattr(self, "groups_skipped", 0)
        if skipped:
            print(
                f"{skipped} item(s) gave no group: {type(self).__name__}.collect_trajectories returned "
                "none without a failed rollout (an evaluation-only environment? its `evaluate` command runs it)",
                file=out,
                flush=True,
            )
        if stop_reason and summary["groups"] == 0:
            raise SystemExit(f"error: no groups were produced: {stop_reason}")
