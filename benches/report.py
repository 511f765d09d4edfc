"""Turn one run's results into the goals table, the Markdown report and the PNG plots."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

SIZE_ORDER = ["20KB", "100KB", "400KB", "1MB"]


def case_id(fmt: str, dense: bool, size: str) -> str:
    return f"{fmt}/{'dense' if dense else 'free'}/{size}"


def _get(d: dict | None, *keys: str) -> Any:
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d


def _ratio(slow: float | None, fast: float | None) -> float | None:
    if slow is None or fast is None or fast <= 0 or slow <= 0:
        return None
    return slow / fast


def numbers(res: dict[str, Any], fmt: str, dense: bool, size: str) -> dict[str, float | None]:
    """Every measurement of one workload, flattened (None where a column did not run)."""
    cid = case_id(fmt, dense, size)
    h = _get(res, "hermes_env", cid) or {}
    v = _get(res, "vllm", "cases") or {}
    r = _get(res, "rust", "cases", cid) or {}
    vw, vs = v.get(cid + "/whole") or {}, v.get(cid + "/stream") or {}
    return {
        "bytes": _get(h, "bytes"),
        "h_whole_s": _get(h, "whole", "seconds"),
        "h_whole_mb_s": _get(h, "whole", "mb_per_s"),
        "h_tok_us": _get(h, "stream", "per_token_us"),
        "h_win_us": _get(h, "stream", "window_per_token_us"),
        "v_whole_s": vw.get("seconds"),
        "v_whole_mb_s": vw.get("mb_per_s"),
        "v_win_us": vs.get("per_token_us"),
        "v_full_us": vs.get("full_per_token_us"),
        "r_whole_s": r.get("hermes_whole_s"),
        "r_whole_mb_s": r.get("hermes_whole_mb_s"),
        "r_stream_s": r.get("hermes_stream_s"),
        "r_stream_fwd_s": r.get("hermes_stream_forward_s", r.get("hermes_stream_s")),
        "r_chunks": r.get("chunks"),
        "p_whole_s": r.get("peer_whole_s"),
        "p_whole_mb_s": r.get("peer_whole_mb_s"),
        "p_stream_s": r.get("peer_stream_s"),
    }


def _goal(
    goal: str, target: str, measured: float | None, threshold: float, unit: str, higher: bool = True, needs: str = ""
) -> dict:
    """One target; ``measured`` None (the run did not measure what the target is about) is "not measured", never
    MISSED. ``needs`` says what a run must measure for it (e.g. "1MB outputs")."""
    if measured is None or (isinstance(measured, float) and math.isnan(measured)):
        return {"goal": goal, "target": target, "measured": None, "met": None, "unit": unit, "needs": needs}
    met = measured >= threshold if higher else measured <= threshold
    return {"goal": goal, "target": target, "measured": measured, "met": met, "unit": unit, "needs": needs}


#: The output sizes the parser targets are set for (a run that did not measure them reports "not measured").
BIG, MID, SMALL = "1MB", "400KB", "20KB"


def goals(res: dict[str, Any]) -> list[dict[str, Any]]:
    """The project's performance targets, evaluated on this run's numbers at the sizes they are set for.

    Parser targets compare 1 MB outputs (400 KB for streaming against vLLM, 20 KB -> 1 MB for flat cost); the
    trajectory and sandbox targets their full workloads. A quick run measures none of these, so its goals are
    all "not measured" rather than compared with the wrong numbers.
    """
    fmts: list[str] = res.get("formats", [])
    sizes = res.get("sizes", {})
    out: list[dict[str, Any]] = []

    def n(fmt: str, dense: bool, size: str) -> dict[str, float | None]:
        if size not in sizes:
            return dict.fromkeys(numbers(res, fmt, dense, SMALL), None)
        return numbers(res, fmt, dense, size)

    def goal(
        label: str,
        target: str,
        measured: float | None,
        threshold: float,
        unit: str,
        *,
        higher: bool = True,
        needs: str = f"{BIG} outputs",
    ) -> None:
        out.append(_goal(label, target, measured, threshold, unit, higher, needs))

    # Against vLLM on call-dense outputs: (label, size, vLLM key, hermes_env key, {format: at least this many x}).
    vs_vllm = [
        (f"whole-text, call-dense {BIG}", BIG, "v_whole_s", "h_whole_s", {"hermes": 10.0, "qwen3_coder": 500.0}),
        (
            f"token-by-token streaming at {MID}",
            MID,
            "v_win_us",
            "h_win_us",
            {"hermes": 500.0, "qwen3_coder": 20.0, "llama3_json": 1000.0},
        ),
    ]
    for label, size, peer_key, own_key, needs in vs_vllm:
        for fmt, need in needs.items():
            if fmt in fmts:
                x = n(fmt, True, size)
                measured = _ratio(x[peer_key], x[own_key])
                goal(f"{label}: vs vLLM {fmt}", f">= {need:g}x", measured, need, "x", needs=f"{size} outputs and vLLM")
    for fmt in fmts:
        x = n(fmt, False, BIG)
        r = _ratio(x["v_whole_s"], x["h_whole_s"])
        if r is not None:
            goal(f"whole-text, call-free {BIG}: vs vLLM {fmt} fast path", ">= 1x", r, 1.0, "x")
    for fmt in fmts:
        a, b = n(fmt, True, SMALL)["h_tok_us"], n(fmt, True, BIG)["h_tok_us"]
        goal(
            f"per-token streaming flat {SMALL} -> {BIG} ({fmt})",
            "<= 1.5x growth",
            _ratio(b, a),
            1.5,
            "x",
            higher=False,
            needs=f"{SMALL} and {BIG} outputs",
        )
    for fmt in fmts:
        x = n(fmt, True, BIG)
        if x["p_whole_s"] is not None:
            goal(f"whole text vs tool-parser ({fmt}, {BIG})", ">= 1x", _ratio(x["p_whole_s"], x["r_whole_s"]), 1, "x")
        if x["p_stream_s"] is not None:
            goal(
                f"streaming (4-byte chunks) vs tool-parser ({fmt}, {BIG})",
                "> 1x",
                _ratio(x["p_stream_s"], x["r_stream_s"]),
                1.0 + 1e-9,
                "x",
            )
    # Absolute numbers of the Python API and the pure-Rust crate.
    if "hermes" in fmts:
        goal(f"parse, call-free {BIG} (hermes)", ">= 1000 MB/s", n("hermes", False, BIG)["h_whole_mb_s"], 1000, "MB/s")
    for fmt in fmts:
        need = 400.0 if fmt == "hermes" else 300.0
        goal(f"parse, call-dense {BIG} ({fmt})", f">= {need:g} MB/s", n(fmt, True, BIG)["h_whole_mb_s"], need, "MB/s")
        limit = 1.0 if fmt in ("hermes", "qwen", "longcat") else 1.5
        goal(
            f"Python streaming per token, call-dense {BIG} ({fmt})",
            f"<= {limit:g} us",
            n(fmt, True, BIG)["h_tok_us"],
            limit,
            "us",
            higher=False,
        )
        x = n(fmt, True, BIG)
        goal(
            f"Rust streaming (4-byte chunks, events forwarded) / whole, {BIG} ({fmt})",
            "<= 3x",
            _ratio(x["r_stream_fwd_s"], x["r_whole_s"]),
            3.0,
            "x",
            higher=False,
            needs=f"{BIG} outputs and rust/bench_peers",
        )
    # The managed server's per-turn cost (benches/longroll_bench.py), targets set at ~100k-token prompts.
    longroll = res.get("longroll")
    if isinstance(longroll, dict):
        needs = "the full longroll workload"
        flat = longroll.get("flatness") or {}
        # Its flatness: (label, measured key, target key, target as shown, unit), lower is better.
        flatness = [
            ("managed server per turn, ~100k / ~6k tokens", "ratio_100k_to_6k", "target", "<= {:g}x", "x"),
            ("managed server per turn at ~100k tokens", "ms_at_100k", "target_ms", "< {:g} ms", "ms"),
        ]
        if flat:
            for label, key, target_key, shown, unit in flatness:
                limit = float(flat[target_key])
                goal(label, shown.format(limit), flat.get(key), limit, unit, higher=False, needs=needs)
        vs = longroll.get("vs_atroposlib") or {}
        if vs:
            full = vs.get("at_tokens") == 100_000  # a quick run stops at ~10k tokens
            goal(
                "managed server per turn at ~100k tokens vs atroposlib",
                f">= {vs['target']:g}x",
                vs.get("speedup") if full else None,
                float(vs["target"]),
                "x",
                needs=needs,
            )
    # Trajectory and sandbox benches report {"speedup"..., "target"} per comparison, for their full workload.
    for section in ("trajectory", "sandbox"):
        data = res.get(section)
        if not isinstance(data, dict):
            continue
        full = res.get("mode") != "quick"
        for name, sub in data.items():
            if not isinstance(sub, dict) or not isinstance(sub.get("target"), int | float):
                continue
            for key, val in sub.items():
                if "speedup" in key and isinstance(val, int | float):
                    label = f"{section}: {name} {key.replace('_', ' ')} vs atroposlib"
                    goal(
                        label,
                        f">= {sub['target']:g}x",
                        float(val) if full else None,
                        float(sub["target"]),
                        "x",
                        needs=f"the full {section} workload",
                    )
    return out


def _flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


def _fmt(x: float | None, digits: int = 3) -> str:
    if x is None:
        return "—"
    if x >= 100:
        return f"{x:,.0f}"
    return f"{x:.{digits}g}"


def _mark(met: bool | None) -> str:
    return {True: "met", False: "**MISSED**", None: "not measured"}[met]


def markdown(res: dict[str, Any], plots: list[str]) -> str:
    m = res["machine"]
    lines = [
        f"# hermes_env benchmarks — {res['date']} on {m['host']}",
        "",
        f"Machine: **{m['cpu']}**, {m['cores']} logical cores, {m['memory_gb']} GB RAM, {m['os']}; "
        f"Python {m['python']}. Mode: `{res['mode']}`. Commit `{res.get('commit', '?')}`. "
        f"Command: `{res['command']}`",
        "",
        f"Peers: vLLM — {res['vllm'].get('version') or res['vllm'].get('status')}; "
        f"tool-parser — {res['rust'].get('status')}.",
        "",
        *(
            [
                f"Columns {', '.join(res['reused']['columns'])} come from {res['reused']['from']} "
                f"({res['reused']['date']}, this machine).",
                "",
            ]
            if res.get("reused")
            else []
        ),
        "## Targets",
        "",
        "Throughput against vLLM, tool-parser and atroposlib, and absolute numbers, at the sizes each target is "
        "set for.",
        "",
    ]
    measured = [g for g in res["goals"] if g["met"] is not None]
    unmeasured = [g for g in res["goals"] if g["met"] is None]
    if measured:
        lines += ["| goal | target | measured | status |", "|---|---|---|---|"]
        for g in measured:
            lines.append(f"| {g['goal']} | {g['target']} | {_fmt(g['measured'])} {g['unit']} | {_mark(g['met'])} |")
    if unmeasured:
        needs = sorted({g.get("needs") or "other inputs" for g in unmeasured})
        lines += [
            "",
            f"{len(unmeasured)} of {len(res['goals'])} targets not measured by this run (they need "
            f"{'; '.join(needs)}){': run --full' if res.get('mode') == 'quick' else ''}.",
        ]
    lines += [
        "",
        "## Parsers: whole text (MB/s) and streaming (µs per token)",
        "",
        "Ratios are peer time / hermes time from this run. Streaming per token: hermes_env feeds one Qwen3 token's "
        "text per `feed` over the whole output (mean); `window` columns are the mean over the last tokens of the "
        "output, the same tokens the vLLM column times (see benches/vllm_side.py). Rust columns: hermes_core and "
        "tool-parser 1.10.0 in one binary, streaming in 4-byte chunks; `Rust stream/whole` forwards each event's "
        "text to a sink as it comes (as a server writing SSE chunks would), `Vec<Event>` builds an owned `Event` per "
        "delta (an allocation each), which is also how the tool-parser comparison runs (it allocates its deltas too).",
        "",
        "| format | calls | size (bytes) | hermes_env MB/s | vLLM MB/s | vs vLLM | hermes_core MB/s "
        "| tool-parser MB/s | vs tool-parser | Rust stream/whole | Rust stream (Vec<Event>)/whole "
        "| tool-parser stream / hermes_core stream | hermes_env µs/tok | hermes_env window µs/tok "
        "| vLLM window µs/tok | vs vLLM (stream) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for fmt in res["formats"]:
        for dense in (True, False):
            for size in SIZE_ORDER:
                if size not in res["sizes"]:
                    continue
                x = numbers(res, fmt, dense, size)
                if x["bytes"] is None:
                    continue
                cells = [
                    fmt,
                    "dense" if dense else "none",
                    f"{size} ({x['bytes']:,})",
                    _fmt(x["h_whole_mb_s"]),
                    _fmt(x["v_whole_mb_s"]),
                    _fmt(_ratio(x["v_whole_s"], x["h_whole_s"])),
                    _fmt(x["r_whole_mb_s"]),
                    _fmt(x["p_whole_mb_s"]),
                    _fmt(_ratio(x["p_whole_s"], x["r_whole_s"])),
                    _fmt(_ratio(x["r_stream_fwd_s"], x["r_whole_s"])),
                    _fmt(_ratio(x["r_stream_s"], x["r_whole_s"])),
                    _fmt(_ratio(x["p_stream_s"], x["r_stream_s"])),
                    _fmt(x["h_tok_us"]),
                    _fmt(x["h_win_us"]),
                    _fmt(x["v_win_us"]),
                    _fmt(_ratio(x["v_win_us"], x["h_win_us"])),
                ]
                lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "## Calls found (same bytes in, so the counts should agree)", ""]
    diffs = []
    for fmt in res["formats"]:
        for size in SIZE_ORDER:
            cid = case_id(fmt, True, size)
            counts = {
                "hermes_env": _get(res, "hermes_env", cid, "whole", "tool_calls"),
                "hermes_core": _get(res, "rust", "cases", cid, "hermes_calls"),
                "tool-parser": _get(res, "rust", "cases", cid, "peer_calls"),
                "vLLM": _get(res, "vllm", "cases", cid + "/whole", "tool_calls"),
            }
            seen = {k: v for k, v in counts.items() if v is not None}
            if len(set(seen.values())) > 1:
                diffs.append(f"- `{cid}`: " + ", ".join(f"{k} {v}" for k, v in seen.items()))
    lines += diffs or ["Every implementation that ran found the same number of calls in every call-dense output."]
    skipped = {k: v for k, v in (_get(res, "vllm", "cases") or {}).items() if "skipped" in v or "error" in v}
    if skipped:
        lines += ["", "vLLM cases not measured:", ""]
        lines += [f"- `{k}`: {v.get('skipped') or v.get('error')}" for k, v in skipped.items()]
    few = {
        k: v
        for k, v in (_get(res, "vllm", "cases") or {}).items()
        if isinstance(v.get("window_tokens"), int) and v["window_tokens"] < 50
    }
    if few:
        lines += ["", "vLLM streams where the time budget allowed only a few timed tokens:", ""]
        lines += [
            f"- `{k}`: {v['window_tokens']} token(s) in {v['window_seconds']:.1f} s"
            + (f" ({v['note']})" if v.get("note") else "")
            for k, v in few.items()
        ]
    for section in ("trajectory", "longroll", "sandbox"):
        if section not in res:  # results written before the section existed
            continue
        data = res[section]
        lines += ["", f"## {section.title()}", ""]
        if isinstance(data, dict) and isinstance(data.get("markdown"), str):
            lines.append(data["markdown"])
        elif isinstance(data, dict):
            lines += ["| metric | value |", "|---|---|"]
            for k, v in _flatten(data).items():
                if isinstance(v, int | float | str | bool) and len(str(v)) < 200:
                    lines.append(f"| {k} | {_fmt(v) if isinstance(v, float) else v} |")
        else:
            lines.append(str(data))
    lines += ["", "## Plots", ""] + [f"![{Path(p).stem}]({Path(p).name})" for p in plots]
    return "\n".join(lines) + "\n"


#: One colour per implementation, the same in every plot.
COLOURS = {"hermes_env": "#1f77b4", "hermes_core": "#ff7f0e", "tool-parser": "#2ca02c", "vLLM": "#d62728"}

# (file suffix, title, y-axis label, [(implementation, legend label, numbers() key, None = seconds per stream
#  turned into µs per 4-byte chunk)])
PLOTS = [
    (
        "whole",
        "whole-text parse time, call-dense outputs",
        "seconds per output",
        [
            ("hermes_env", "hermes_env (Python API)", "h_whole_s", 1.0),
            ("hermes_core", "hermes_core (Rust)", "r_whole_s", 1.0),
            ("tool-parser", "tool-parser 1.10.0 (Rust)", "p_whole_s", 1.0),
            ("vLLM", "vLLM 0.33.0 (Python)", "v_whole_s", 1.0),
        ],
    ),
    (
        "stream",
        "streaming cost per delta, call-dense outputs",
        "µs per delta",
        [
            ("hermes_env", "hermes_env, per token (Python API)", "h_win_us", 1.0),
            ("hermes_core", "hermes_core, per 4-byte chunk (Rust)", "r_stream_s", None),
            ("tool-parser", "tool-parser, per 4-byte chunk (Rust)", "p_stream_s", None),
            ("vLLM", "vLLM 0.33.0, per token (Python)", "v_win_us", 1.0),
        ],
    ),
]


def plot_points(
    res: dict[str, Any], fmt: str, key: str, scale: float | None
) -> tuple[list[str], list[float], list[float]]:
    """(sizes, bytes, values) of one series in one format's panel, for the sizes this run measured."""
    sizes, xs, ys = [], [], []
    for size in [s for s in SIZE_ORDER if s in res["sizes"]]:
        x = numbers(res, fmt, True, size)
        val = x[key]
        if val is None or x["bytes"] is None:
            continue
        if scale is None:  # seconds per stream -> µs per chunk
            if not x["r_chunks"]:
                continue
            val = val / x["r_chunks"] * 1e6
        sizes.append(size)
        xs.append(x["bytes"])
        ys.append(val)
    return sizes, xs, ys


def plots(res: dict[str, Any], stem: Path) -> list[str]:
    """Log-log plots of time vs output size, one panel per format, one colour per implementation in every plot.

    The legend sits above the panels (never over data); a series with no numbers in this run is listed there as
    "not measured", and a panel lacking a series (or some of its sizes) that the run has elsewhere says so
    above its top right corner (the panel's title sits left).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    fmts = res["formats"]
    written: list[str] = []
    cols = min(3, max(len(fmts), 1))
    rows = math.ceil(len(fmts) / cols)
    for name, title, ylabel, series in PLOTS:
        points = {(fmt, impl): plot_points(res, fmt, key, scale) for fmt in fmts for impl, _, key, scale in series}
        fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.6 * rows + 1.2), squeeze=False)
        for i, fmt in enumerate(fmts):
            ax = axes[i // cols][i % cols]
            missing = []
            run_sizes = [size for size in SIZE_ORDER if size in res["sizes"]]
            for impl, _, _, _ in series:
                measured, xs, ys = points[(fmt, impl)]
                if xs:
                    ax.plot(xs, ys, marker="o", color=COLOURS[impl])
                if not any(points[(f, impl)][0] for f in fmts):
                    continue  # not run at all: the legend says so
                gaps = [size for size in run_sizes if size not in measured]
                if len(gaps) == len(run_sizes):
                    missing.append(impl)
                elif gaps:
                    missing.append(f"{impl} at {', '.join(gaps)}")
            if missing:  # above the panel, right of its left-aligned title: never over a line or the title
                ax.text(
                    1.0,
                    1.01,
                    "not measured: " + "; ".join(missing),
                    transform=ax.transAxes,
                    ha="right",
                    va="bottom",
                    fontsize=7,
                    color="#555555",
                )
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_title(fmt, loc="left")
            ax.set_xlabel("output size (bytes)")
            ax.set_ylabel(ylabel)
            ax.grid(True, which="both", alpha=0.3)
        for j in range(len(fmts), rows * cols):
            axes[j // cols][j % cols].axis("off")
        handles = []
        for impl, label, _, _ in series:
            ran = any(points[(f, impl)][1] for f in fmts)
            handles.append(
                Line2D(
                    [],
                    [],
                    color=COLOURS[impl],
                    marker="o" if ran else None,
                    linestyle="-" if ran else ":",
                    label=label if ran else f"{label}: not measured in this run",
                )
            )
        height = fig.get_figheight()  # inches: title, then the legend, then the panels
        fig.suptitle(
            f"{title} — {res['machine']['cpu']}, {res['machine']['cores']} cores", y=1 - 0.12 / height, va="top"
        )
        fig.legend(
            handles=handles,
            loc="upper center",
            ncol=2,
            fontsize=8,
            frameon=False,
            bbox_to_anchor=(0.5, 1 - 0.42 / height),
        )
        fig.tight_layout(rect=(0, 0, 1, 1 - 0.85 / height))
        path = f"{stem}-{name}.png"
        fig.savefig(path, dpi=90)
        plt.close(fig)
        written.append(path)
    return written
