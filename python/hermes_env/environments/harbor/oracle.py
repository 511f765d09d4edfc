"""``python -m hermes_env.environments.harbor oracle TASKS_DIR [--jobs N] [TASK...]``: Harbor's oracle agent, to check a
task set before training on it.

Per task: the image is built (cached), then in one container the verifier runs before any solution (it must
not pass: reward 0), and in a second container ``solution/solve.sh`` runs and then the verifier (it must pass:
reward 1). A task without ``solution/`` gets the first check only, reported as such. One row per task; a JSON
file and a self-contained HTML page; the exit status is 1 when any task fails its oracle.
"""

from __future__ import annotations

import argparse
import asyncio
import html
import json
import sys
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

from hermes_env.backends.docker import DockerBackend
from hermes_env.containers.engine import detect_engine
from hermes_env.containers.upstream_images import ImageMap
from hermes_env.environments.harbor.runner import HarborRunner, PreparedTask, network_failure, tail
from hermes_env.environments.harbor.task import HarborTask, load_tasks
from hermes_env.errors import ContainerError, HarborTaskError

PASS, FAIL, NO_SOLUTION = "pass", "fail", "no-solution"
CONTAINER_FAILED = "the container failed"


def _container_failed(exc: BaseException) -> str:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return f"{CONTAINER_FAILED}: {first[:240]}"


@dataclass
class OracleRow:
    task: str
    status: str  # pass | fail | no-solution (the before-check passed; nothing more to check)
    reason: str = ""
    build_s: float | None = None
    solve_s: float | None = None
    test_before_s: float | None = None
    test_after_s: float | None = None
    reward_before: float | None = None
    reward_after: float | None = None
    notes: str = ""
    log_tail: str = ""


async def _verify_fresh(
    runner: HarborRunner, backend: DockerBackend, prepared: PreparedTask
) -> tuple[float | None, float, str, str | None]:
    task_id = f"{prepared.task.name}-before-{uuid.uuid4().hex[:6]}"
    runner.use(backend, task_id, prepared)
    try:
        result = await runner.verify(backend, task_id, prepared.task, prepared)
    finally:
        await backend.cleanup(task_id)
    return result.reward, result.seconds, result.output, result.error


async def _solve_and_verify(
    runner: HarborRunner, backend: DockerBackend, prepared: PreparedTask, row: OracleRow
) -> None:
    task = prepared.task
    task_id = f"{task.name}-oracle-{uuid.uuid4().hex[:6]}"
    runner.use(backend, task_id, prepared)
    try:
        solved = await runner.solve(backend, task_id, task)
        row.solve_s = round(solved.seconds, 1)
        if not solved.ok:
            row.status = FAIL
            if solved.timed_out:
                row.reason = f"solution/solve.sh ran past the agent timeout ({task.config.agent.timeout_sec:g}s)"
            elif solved.network_failure:
                row.reason = f"the solution needs a host this machine cannot reach: {solved.network_failure}"
            else:
                row.reason = f"solution/solve.sh exited {solved.exit_code}"
            row.log_tail = tail(solved.output)
            return
        after = await runner.verify(backend, task_id, task, prepared)
        row.test_after_s = round(after.seconds, 1)
        row.reward_after = after.reward
        if after.error or after.reward is None or after.reward < 1.0:
            row.status = FAIL
            row.reason = after.error or f"reward {after.reward} after the solution (must be 1)"
            unreachable = network_failure(after.output)
            if unreachable:
                row.reason += f"; the verifier needs a host it cannot reach at verify time: {unreachable}"
            row.log_tail = tail(after.output)
        else:
            row.status = PASS
    finally:
        await backend.cleanup(task_id)


async def check_task(runner: HarborRunner, backend: DockerBackend, task: HarborTask) -> OracleRow:
    row = OracleRow(task=task.name, status=FAIL)
    started = time.monotonic()
    try:
        prepared = await runner.prepare(task)
    except (ContainerError, RuntimeError, TimeoutError) as exc:
        row.build_s = round(time.monotonic() - started, 1)
        row.reason = "build failed"
        row.log_tail = tail(str(exc))
        return row
    row.build_s = round(prepared.build_seconds, 1)
    row.notes = "; ".join(prepared.notes)
    before = asyncio.ensure_future(_verify_fresh(runner, backend, prepared))
    try:
        if task.solution_dir is not None:
            await _solve_and_verify(runner, backend, prepared, row)
    except ContainerError as exc:
        row.status, row.reason, row.log_tail = FAIL, _container_failed(exc), tail(str(exc))
    finally:
        (checked,) = await asyncio.gather(before, return_exceptions=True)
    if isinstance(checked, BaseException):
        if not isinstance(checked, ContainerError):
            raise checked
        row.status, row.reason, row.log_tail = FAIL, _container_failed(checked), tail(str(checked))
        return row
    if row.reason.startswith(CONTAINER_FAILED):
        row.reward_before, row.test_before_s = checked[0], round(checked[1], 1)
        return row
    reward, seconds, output, error = checked
    row.test_before_s = round(seconds, 1)
    row.reward_before = reward
    if error is not None and reward is None:
        row.status, row.reason, row.log_tail = FAIL, f"verifier before the solution: {error}", tail(output)
    elif reward is not None and reward >= 1.0:
        row.status, row.reason, row.log_tail = FAIL, "the tests pass before any solution", tail(output)
    elif task.solution_dir is None:
        row.status, row.reason = NO_SOLUTION, "no solution/: only checked that the tests fail before one"
    return row


async def run_oracle(
    tasks: list[HarborTask],
    *,
    jobs: int,
    image_map: ImageMap | None = None,
    memory_mb_cap: int | None = None,
    progress: bool = True,
) -> list[OracleRow]:
    engine = detect_engine(None)
    runner = HarborRunner(
        engine, image_map=image_map, max_parallel_builds=max(1, min(jobs, 4)), memory_mb_cap=memory_mb_cap
    )
    backend = DockerBackend(engine=engine.program, start_timeout_s=300)
    slots = asyncio.Semaphore(jobs)

    async def one(task: HarborTask) -> OracleRow:
        async with slots:
            row = await check_task(runner, backend, task)
        if progress:
            print(_format_row(row), flush=True)
        return row

    try:
        rows = await asyncio.gather(*(one(t) for t in tasks))
    finally:
        await backend.aclose()
    return list(rows)


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


_COLUMNS = ("task", "status", "build_s", "solve_s", "test_before_s", "test_after_s", "reward_before", "reward_after")


def _format_row(row: OracleRow) -> str:
    cells = [row.task[:32].ljust(32), row.status.ljust(11)]
    cells += [_num(getattr(row, c)).rjust(8) for c in _COLUMNS[2:]]
    line = " ".join(cells)
    if row.reason and row.status != PASS:
        line += f"  {row.reason}"
    return line


def render_html(rows: list[OracleRow], title: str) -> str:
    colour = {PASS: "#d7f5dd", FAIL: "#fbd9d9", NO_SOLUTION: "#fff3c4"}
    head = "".join(f"<th>{html.escape(c)}</th>" for c in (*_COLUMNS, "reason"))
    body = []
    for row in rows:
        cells = "".join(f"<td>{html.escape(str(getattr(row, c)) if getattr(row, c) is not None else '-')}</td>"
                        for c in _COLUMNS)  # fmt: skip
        detail = html.escape(row.reason)
        if row.log_tail:
            detail += f"<details><summary>log</summary><pre>{html.escape(row.log_tail)}</pre></details>"
        if row.notes:
            detail += f"<div class=notes>{html.escape(row.notes)}</div>"
        body.append(f'<tr style="background:{colour.get(row.status, "#fff")}">{cells}<td>{detail}</td></tr>')
    counts = {s: sum(r.status == s for r in rows) for s in (PASS, FAIL, NO_SOLUTION)}
    summary = ", ".join(f"{n} {s}" for s, n in counts.items())
    return (
        "<!doctype html><html><head><meta charset=utf-8><title>" + html.escape(title) + "</title><style>"
        "body{font:14px sans-serif;margin:1em}table{border-collapse:collapse}td,th{border:1px solid #bbb;"
        "padding:3px 6px;vertical-align:top}pre{white-space:pre-wrap;max-width:80em}.notes{color:#666;"
        "font-size:12px}</style></head><body><h1>" + html.escape(title) + f"</h1><p>{html.escape(summary)}</p>"
        f"<table><tr>{head}</tr>{''.join(body)}</table></body></html>\n"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hermes_env.environments.harbor oracle", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("tasks_dir", help="a folder of Harbor tasks (or one task)")
    parser.add_argument("tasks", nargs="*", help="task names to check (default: all)")
    parser.add_argument("--jobs", type=int, default=2, help="tasks checked at once (default 2)")
    parser.add_argument("--out", default="data/harbor_oracle", help="writes OUT.json and OUT.html")
    parser.add_argument("--image-map", default=None, help="a JSON or TOML file of image map entries (pattern = target)")
    parser.add_argument("--memory-cap", type=int, default=None, metavar="MB",
                        help="hold every task's memory_mb to at most MB (said in the task's notes)")  # fmt: skip
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    if args.memory_cap is not None and args.memory_cap < 64:
        parser.error("--memory-cap must be at least 64 (MB)")
    try:
        tasks = load_tasks(args.tasks_dir, args.tasks or None)
        image_map = load_image_map(args.image_map) if args.image_map else None
    except (HarborTaskError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(" ".join([c[:32].ljust(32) if i == 0 else c.ljust(11) if i == 1 else c[:8].rjust(8)
                    for i, c in enumerate(_COLUMNS)]))  # fmt: skip
    try:
        rows = asyncio.run(run_oracle(tasks, jobs=args.jobs, image_map=image_map, memory_mb_cap=args.memory_cap))
    except ContainerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps([asdict(r) for r in rows], indent=2) + "\n")
    out.with_suffix(".html").write_text(render_html(rows, f"Harbor oracle: {args.tasks_dir}"))
    failed = [r.task for r in rows if r.status == FAIL]
    print(f"{len(rows) - len(failed)} of {len(rows)} tasks pass their oracle; wrote {out}.json and {out}.html")
    return 1 if failed else 0


def load_image_map(path: str) -> ImageMap:
    """Image map entries from a JSON object or a TOML table (``"pattern" = "target"``)."""
    text = Path(path).read_text()
    if path.endswith(".toml"):
        import tomllib

        entries = tomllib.loads(text)
    else:
        entries = json.loads(text)
    if not isinstance(entries, dict) or not all(isinstance(v, str) for v in entries.values()):
        raise ValueError(f"{path} must map image patterns to targets (strings)")
    return ImageMap(entries=entries)
