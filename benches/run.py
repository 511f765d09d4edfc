"""Run every hermes_env benchmark, with its peers side by side, and publish the results.

    python benches/run.py --full --vllm-python .vllm-oracle/bin/python     # publishing run
    python benches/run.py --quick                                           # CI smoke (seconds)

Writes ``benches/results/<date>-<host>.json``, ``.md`` (tables, machine in the header, goals met
or missed) and ``-whole.png`` / ``-stream.png`` (time vs output size, log-log, one line per
implementation). Columns:

- hermes_env through its Python API: ``parse`` and token-by-token ``feed`` (benches/hermes_side.py);
- vLLM 0.33.0's Python parsers in the ``--vllm-python`` interpreter (benches/vllm_side.py); skipped
  with the reason printed when no interpreter is given;
- hermes_core (pure Rust) and the ``tool-parser`` crate, whole text and 4-byte-chunk streaming
  (rust/bench_peers; ``--full`` builds it with cargo, ``--quick`` skips it unless ``--rust-peers``);
- ``benches/trajectory_bench.py``, ``benches/longroll_bench.py`` (the managed server's per-turn cost as a
  rollout grows, vs atroposlib's) and ``benches/sandbox_bench.py`` (their ``run(quick)`` dicts).

Timings are wall-clock on a shared machine: ratios are computed within this one run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import json
import os
import platform
import shlex
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import hermes_side  # noqa: E402
import peers  # noqa: E402
import report  # noqa: E402
import workloads  # noqa: E402


def machine() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        mem_kb = next(
            int(line.split()[1])
            for line in Path("/proc/meminfo").read_text().splitlines()
            if line.startswith("MemTotal")
        )
        mem = round(mem_kb / 1024 / 1024, 1)
    except (OSError, StopIteration, ValueError):
        mem = None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "host": socket.gethostname(),
        "cpu": cpu,
        "cores": cores,
        "memory_gb": mem,
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
    }


def git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True)
        return out.stdout.strip() or None
    except OSError:
        return None


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def _optional_bench(module: str, quick: bool) -> dict[str, Any]:
    """Run ``benches/<module>.py``'s ``run(quick)``; a missing or failing bench is recorded, not fatal."""
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        return {"skipped": f"benches/{module}.py is not importable: {exc}"}
    try:
        t0 = time.perf_counter()
        out = mod.run(quick)
        if not isinstance(out, dict):
            return {"error": f"{module}.run returned {type(out).__name__}, expected dict"}
        out.setdefault("wall_seconds", time.perf_counter() - t0)
        return out
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc(limit=5)}


def parser_formats(only: list[str] | None) -> list[str]:
    from hermes_env.parsers import list_parsers

    have = set(list_parsers())
    fmts = [f for f in workloads.RENDERERS if f in have]
    if only:
        unknown = sorted(set(only) - set(fmts))
        if unknown:
            raise SystemExit(f"--formats: {unknown} not benchmarkable; choose from {fmts}")
        fmts = [f for f in fmts if f in only]
    return fmts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Run every hermes_env benchmark with its peers side by side.")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="smoke run: 20 KB only, seconds, no peers by default")
    mode.add_argument("--full", action="store_true", help="publishing run: 20 KB .. 1 MB, every peer (default)")
    ap.add_argument("--vllm-python", help="interpreter where `import vllm.tool_parsers` works (vLLM column)")
    ap.add_argument("--rust-peers", action="store_true", help="also build/run rust/bench_peers in --quick")
    ap.add_argument("--no-rust-peers", action="store_true", help="skip rust/bench_peers in --full")
    ap.add_argument("--formats", nargs="*", help="only these parser formats")
    ap.add_argument("--sizes", nargs="*", choices=list(workloads.SIZES), help="only these output sizes")
    ap.add_argument(
        "--skip",
        nargs="*",
        default=[],
        choices=["vllm", "rust", "trajectory", "longroll", "sandbox"],
        help="columns not to run",
    )
    ap.add_argument("--reuse", metavar="JSON", help="copy the --skip'ped columns from this earlier results file")
    ap.add_argument("--out-dir", default=str(HERE / "results"), help="where results go (default benches/results)")
    ap.add_argument("--dump-workloads", metavar="DIR", help="only write the Rust bench inputs to DIR and exit")
    ap.add_argument("--report-only", metavar="JSON", help="re-render the .md and plots of a results file and exit")
    args = ap.parse_args(argv)
    if args.report_only:
        src = Path(args.report_only)
        res = json.loads(src.read_text(encoding="utf-8"))
        res["goals"] = report.goals(res)
        stem = src.with_suffix("")
        pngs = report.plots(res, stem)
        src.write_text(json.dumps(res, indent=1, default=str), encoding="utf-8")
        Path(f"{stem}.md").write_text(report.markdown(res, pngs), encoding="utf-8")
        log(f"re-rendered {stem}.md and {', '.join(pngs)}")
        return 0
    quick = bool(args.quick)
    sizes = {"20KB": workloads.SIZES["20KB"]} if quick else dict(workloads.SIZES)
    if args.sizes:
        sizes = {k: v for k, v in workloads.SIZES.items() if k in args.sizes}
    fmts = parser_formats(args.formats)
    min_time = 0.02 if quick else 0.3
    window = 100 if quick else 500
    repeats = 1 if quick else 3

    if args.dump_workloads:
        items = [
            (report.case_id(f, d, s), f, d, s, workloads.assistant_output(f, n, d))
            for f in fmts
            for d in (True, False)
            for s, n in sizes.items()
        ]
        folder = peers.write_rust_inputs(Path(args.dump_workloads), items, sub="")
        print(folder)
        return 0

    started = dt.datetime.now(dt.UTC)
    res: dict[str, Any] = {
        "date": started.strftime("%Y-%m-%d %H:%M UTC"),
        "mode": "quick" if quick else "full",
        "command": "python benches/run.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:])),
        "commit": git_commit(),
        "machine": machine(),
        "formats": fmts,
        "sizes": sizes,
        "window_deltas": window,
        "hermes_env": {},
        "vllm": {},
        "rust": {},
    }
    log(f"{res['mode']} run: formats {fmts}, sizes {list(sizes)}")

    # 1. hermes_env (Python API), and the inputs every peer gets.
    with tempfile.TemporaryDirectory(prefix="hermes-bench-") as tmpname:
        tmp = Path(tmpname)
        vllm_cases: list[dict[str, Any]] = []
        rust_items: list[tuple[str, str, bool, str, str]] = []
        for fmt in fmts:
            for dense in (True, False):
                for size, nbytes in sizes.items():
                    cid = report.case_id(fmt, dense, size)
                    text = workloads.assistant_output(fmt, nbytes, dense)
                    ts = workloads.output_stream(fmt, nbytes, dense) if dense or fmt == "hermes" else None
                    if ts is not None:
                        text = ts.text  # identical unless the tokenizer normalised something
                    entry: dict[str, Any] = {
                        "bytes": len(text.encode()),
                        "whole": hermes_side.whole(fmt, text, min_time),
                    }
                    if ts is not None:
                        entry["stream"] = hermes_side.stream(fmt, ts, window, repeats)
                    res["hermes_env"][cid] = entry
                    log(f"hermes_env {cid}: {json.dumps(entry)}")
                    rust_items.append((cid, fmt, dense, size, text))
                    inp = tmp / f"{cid.replace('/', '_')}.json"
                    payload: dict[str, Any] = {"text": text}
                    if ts is not None and dense:
                        payload.update(deltas=ts.deltas, delta_ids=ts.delta_ids)
                    inp.write_text(json.dumps(payload), encoding="utf-8")
                    common = {"parser": fmt, "input": str(inp), "bytes": len(text.encode()), "max_seconds": 120.0}
                    vllm_cases.append(
                        {**common, "id": cid + "/whole", "group": f"{fmt}/{dense}/whole", "mode": "whole"}
                    )
                    if dense:
                        vllm_cases.append(
                            {
                                **common,
                                "id": cid + "/stream",
                                "group": f"{fmt}/stream",
                                "mode": "stream",
                                "window": window,
                                "budget": 3.0 if quick else 8.0,
                                "full": size == "20KB" and not quick,
                            }
                        )
        # Whole cases first by size within each group, so extrapolation can skip hopeless ones.
        vllm_cases.sort(key=lambda c: (c["group"], c["bytes"]))

        # 2. vLLM column.
        if "vllm" in args.skip:
            res["vllm"] = {"status": "skipped (--skip vllm)"}
        elif not args.vllm_python:
            reason = "skipped: no --vllm-python given (see tools/vllm-oracle/README.md to make one)"
            log(f"vLLM column {reason}")
            res["vllm"] = {"status": reason}
        else:
            version = peers.vllm_version(args.vllm_python)
            if version is None:
                reason = f"skipped: `import vllm.tool_parsers` fails under {args.vllm_python}"
                log(f"vLLM column {reason}")
                res["vllm"] = {"status": reason}
            else:
                have = peers.vllm_parsers(args.vllm_python, fmts)
                cases = [c for c in vllm_cases if c["parser"] in have]
                log(f"vLLM {version}: parsers {have}, {len(cases)} cases")
                out, reason = peers.run_vllm(args.vllm_python, cases, tmp, timeout=600 if quick else 5400)
                res["vllm"] = (
                    {"status": "ok", "version": version, "parsers": have, **out}
                    if out
                    else {"status": f"failed: {reason}"}
                )

        # 3. Pure-Rust hermes_core and the tool-parser crate.
        if "rust" in args.skip:
            res["rust"] = {"status": "skipped (--skip rust)"}
        elif (quick and not args.rust_peers) or args.no_rust_peers:
            res["rust"] = {"status": "skipped (--quick runs it only with --rust-peers)"}
        else:
            log("building rust/bench_peers (hermes_core + tool-parser 1.10.0)")
            exe, reason = peers.build_bench_peers()
            if exe is None:
                res["rust"] = {"status": f"not built: {reason}"}
                log(res["rust"]["status"])
            else:
                folder = peers.write_rust_inputs(tmp, rust_items)
                out, reason = peers.run_bench_peers(exe, folder, min_time, timeout=600 if quick else 3600)
                res["rust"] = {"status": "ok, tool-parser 1.10.0", **out} if out else {"status": f"failed: {reason}"}

    # 4. Trajectory, long-rollout and sandbox benchmarks (owned by their modules).
    for name in ("trajectory", "longroll", "sandbox"):
        if name in args.skip:
            res[name] = {"skipped": f"--skip {name}"}
            continue
        log(f"{name}_bench.run(quick={quick})")
        res[name] = _optional_bench(f"{name}_bench", quick)
    if args.reuse:
        # Columns not re-run come from an earlier run on this machine (recorded as such).
        earlier = json.loads(Path(args.reuse).read_text(encoding="utf-8"))
        res["reused"] = {"from": f"the run in {args.reuse}", "date": earlier.get("date"), "columns": list(args.skip)}
        for name in args.skip:
            if name in earlier:
                res[name] = earlier[name]

    # 5. Report.
    res["goals"] = report.goals(res)
    res["wall_seconds"] = (dt.datetime.now(dt.UTC) - started).total_seconds()
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = out_dir / f"{started.strftime('%Y-%m-%d')}-{res['machine']['host']}{'-quick' if quick else ''}"
    pngs = report.plots(res, stem)
    md = report.markdown(res, pngs)
    Path(f"{stem}.json").write_text(json.dumps(res, indent=1, default=str), encoding="utf-8")
    Path(f"{stem}.md").write_text(md, encoding="utf-8")
    print(md)
    log(f"wrote {stem}.json, {stem}.md, {', '.join(pngs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
