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


def _goal(goal: str, target: str, measured: float | None, threshold: float, unit: str, higher: bool = True) -> dict:
    if measured is None or (isinstance(measured, float) and math.isnan(measured)):
        return {"goal": goal, "target": target, "measured": None, "met": None, "unit": unit}
    met = measured >= threshold if higher else measured <= threshold
    return {"goal": goal, "target": target, "measured": measured, "met": met, "unit": unit}


def goals(res: dict[str, Any]) -> list[dict[str, Any]]:
    """Issue 6's targets (plus the parser issues' absolute ones), evaluated on this run's numbers."""
    fmts: list[str] = res.get("formats", [])
    big = "1MB" if "1MB" in res.get("sizes", {}) else max(res.get("sizes", {"20KB": 0}), key=SIZE_ORDER.index)
    mid = "400KB" if "400KB" in res.get("sizes", {}) else big
    small = "20KB"
    out: list[dict[str, Any]] = []

    def n(fmt: str, dense: bool, size: str) -> dict[str, float | None]:
        return numbers(res, fmt, dense, size)

    for fmt, need in (("hermes", 10.0), ("qwen3_coder", 500.0)):
        if fmt in fmts:
            x = n(fmt, True, big)
            out.append(
                _goal(
                    f"whole-text, call-dense {big}: vs vLLM {fmt}",
                    f">= {need:g}x",
                    _ratio(x["v_whole_s"], x["h_whole_s"]),
                    need,
                    "x",
                )
            )
    for fmt in fmts:
        x = n(fmt, False, big)
        r = _ratio(x["v_whole_s"], x["h_whole_s"])
        if r is not None:
            out.append(_goal(f"whole-text, call-free {big}: vs vLLM {fmt} fast path", ">= 1x", r, 1.0, "x"))
    for fmt, need in (("hermes", 500.0), ("qwen3_coder", 20.0), ("llama3_json", 1000.0)):
        if fmt in fmts:
            x = n(fmt, True, mid)
            out.append(
                _goal(
                    f"token-by-token streaming at {mid}: vs vLLM {fmt}",
                    f">= {need:g}x",
                    _ratio(x["v_win_us"], x["h_win_us"]),
                    need,
                    "x",
                )
            )
    for fmt in fmts:
        a, b = n(fmt, True, small)["h_tok_us"], n(fmt, True, big)["h_tok_us"]
        out.append(
            _goal(f"per-token streaming flat {small} -> {big} ({fmt})", "<= 1.5x growth", _ratio(b, a), 1.5, "x", False)
        )
    for fmt in fmts:
        x = n(fmt, True, big)
        if x["p_whole_s"] is not None:
            out.append(
                _goal(
                    f"whole text vs tool-parser ({fmt}, {big})", ">= 1x", _ratio(x["p_whole_s"], x["r_whole_s"]), 1, "x"
                )
            )
        if x["p_stream_s"] is not None:
            out.append(
                _goal(
                    f"streaming (4-byte chunks) vs tool-parser ({fmt}, {big})",
                    "> 1x",
                    _ratio(x["p_stream_s"], x["r_stream_s"]),
                    1.0 + 1e-9,
                    "x",
                )
            )
    # Absolute numbers from the parser issues (Python API and pure-Rust crate).
    if "hermes" in fmts:
        out.append(
            _goal(
                f"parse, call-free {big} (hermes)",
                ">= 1000 MB/s",
                n("hermes", False, big)["h_whole_mb_s"],
                1000,
                "MB/s",
            )
        )
    for fmt in fmts:
        need = 400.0 if fmt == "hermes" else 300.0
        out.append(
            _goal(
                f"parse, call-dense {big} ({fmt})", f">= {need:g} MB/s", n(fmt, True, big)["h_whole_mb_s"], need, "MB/s"
            )
        )
        limit = 1.0 if fmt in ("hermes", "qwen", "longcat") else 1.5
        out.append(
            _goal(
                f"Python streaming per token, call-dense {big} ({fmt})",
                f"<= {limit:g} us",
                n(fmt, True, big)["h_tok_us"],
                limit,
                "us",
                False,
            )
        )
        x = n(fmt, True, big)
        out.append(
            _goal(
                f"Rust streaming (4-byte chunks, events forwarded) / whole, {big} ({fmt})",
                "<= 3x",
                _ratio(x["r_stream_fwd_s"], x["r_whole_s"]),
                3.0,
                "x",
                False,
            )
        )
    longroll = res.get("longroll")
    if isinstance(longroll, dict):
        flat = longroll.get("flatness") or {}
        if flat:
            out.append(_goal("managed server per turn, ~100k / ~6k tokens", f"<= {flat['target']:g}x",
                             flat.get("ratio_100k_to_6k"), float(flat["target"]), "x", False))  # fmt: skip
            out.append(_goal("managed server per turn at ~100k tokens", f"< {flat['target_ms']:g} ms",
                             flat.get("ms_at_100k"), float(flat["target_ms"]), "ms", False))  # fmt: skip
        vs = longroll.get("vs_atroposlib") or {}
        if vs:
            out.append(_goal(f"managed server per turn at ~{vs['at_tokens'] // 1000}k tokens vs atroposlib",
                             f">= {vs['target']:g}x", vs.get("speedup"), float(vs["target"]), "x"))  # fmt: skip
    # Trajectory and sandbox benches report {"speedup"..., "target"} per comparison.
    for section in ("trajectory", "sandbox"):
        data = res.get(section)
        if not isinstance(data, dict):
            continue
        for name, sub in data.items():
            if not isinstance(sub, dict) or not isinstance(sub.get("target"), int | float):
                continue
            for key, val in sub.items():
                if "speedup" in key and isinstance(val, int | float):
                    label = f"{section}: {name} {key.replace('_', ' ')} vs atroposlib"
                    out.append(_goal(label, f">= {sub['target']:g}x", float(val), float(sub["target"]), "x"))
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
        "## Goals (issue 6, and the parser issues' absolute targets)",
        "",
        "| goal | target | measured | status |",
        "|---|---|---|---|",
    ]
    for g in res["goals"]:
        meas = "—" if g["measured"] is None else f"{_fmt(g['measured'])} {g['unit']}"
        lines.append(f"| {g['goal']} | {g['target']} | {meas} | {_mark(g['met'])} |")
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
        data = res.get(section)
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


def plots(res: dict[str, Any], stem: Path) -> list[str]:
    """Log-log plots of time vs output size, one line per implementation, one panel per format."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fmts = res["formats"]
    sizes = [s for s in SIZE_ORDER if s in res["sizes"]]
    written: list[str] = []
    specs = [
        (
            "whole",
            "whole-text parse time (s), call-dense",
            [
                ("hermes_env (Python API)", "h_whole_s", 1.0),
                ("hermes_core (Rust)", "r_whole_s", 1.0),
                ("tool-parser 1.10.0 (Rust)", "p_whole_s", 1.0),
                ("vLLM 0.33.0 (Python)", "v_whole_s", 1.0),
            ],
        ),
        (
            "stream",
            "streaming cost per delta (µs), call-dense",
            [
                ("hermes_env, per token (Python API)", "h_win_us", 1.0),
                ("vLLM 0.33.0, per token", "v_win_us", 1.0),
                ("hermes_core, per 4-byte chunk (Rust)", "r_stream_s", None),
                ("tool-parser, per 4-byte chunk (Rust)", "p_stream_s", None),
            ],
        ),
    ]
    cols = min(3, max(len(fmts), 1))
    rows = math.ceil(len(fmts) / cols)
    for name, title, series in specs:
        fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.8 * rows), squeeze=False)
        for i, fmt in enumerate(fmts):
            ax = axes[i // cols][i % cols]
            for label, key, scale in series:
                xs, ys = [], []
                for size in sizes:
                    x = numbers(res, fmt, True, size)
                    val = x[key]
                    if val is None or x["bytes"] is None:
                        continue
                    if scale is None:  # seconds per stream -> µs per chunk
                        if not x["r_chunks"]:
                            continue
                        val = val / x["r_chunks"] * 1e6
                    xs.append(x["bytes"])
                    ys.append(val)
                if xs:
                    ax.plot(xs, ys, marker="o", label=label)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_title(fmt)
            ax.set_xlabel("output size (bytes)")
            ax.grid(True, which="both", alpha=0.3)
            if i == 0:
                ax.legend(fontsize=7)
        for j in range(len(fmts), rows * cols):
            axes[j // cols][j % cols].axis("off")
        fig.suptitle(f"{title} — {res['machine']['cpu']}, {res['machine']['cores']} cores")
        fig.tight_layout()
        path = f"{stem}-{name}.png"
        fig.savefig(path, dpi=90)
        plt.close(fig)
        written.append(path)
    return written
