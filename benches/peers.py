"""Run the peer columns in their own processes, over inputs written to a temporary folder.

- vLLM: ``benches/vllm_side.py`` under ``--vllm-python`` (an interpreter where ``import
  vllm.tool_parsers`` works; see tools/vllm-oracle/README.md for one without PyTorch).
- tool-parser (and the pure-Rust hermes_core numbers): the ``bench_peers`` binary of the
  standalone crate ``rust/bench_peers``, built with cargo on demand.

Each returns ``(results, reason)``: results is None when the column could not run, and reason says why.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import workloads

ROOT = Path(__file__).resolve().parent.parent
BENCH_PEERS = ROOT / "rust" / "bench_peers"


def vllm_version(python: str) -> str | None:
    try:
        out = subprocess.run(
            [python, "-c", "import vllm.tool_parsers, vllm; print(vllm.__version__)"],
            capture_output=True,
            text=True,
            timeout=300,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip().splitlines()[-1] if out.returncode == 0 and out.stdout.strip() else None


def vllm_parsers(python: str, names: list[str]) -> list[str]:
    """Which of ``names`` the vLLM interpreter registers as tool parsers."""
    code = (
        "import json,sys; from vllm.tool_parsers import ToolParserManager as M; "
        "names=json.loads(sys.argv[1]); ok=[]\n"
        "for n in names:\n"
        "    try: M.get_tool_parser(n); ok.append(n)\n"
        "    except Exception: pass\n"
        "print(json.dumps(ok))"
    )
    out = subprocess.run([python, "-c", code, json.dumps(names)], capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        return []
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_vllm(python: str, cases: list[dict[str, Any]], tmp: Path, timeout: float) -> tuple[dict | None, str]:
    """Run ``cases`` (built by run.py; inputs already written) in the vLLM interpreter."""
    tok_dir = tmp / "tokenizer"
    if not tok_dir.exists():
        workloads.qwen3_tokenizer().save_pretrained(str(tok_dir))
    job = {"tokenizer_dir": str(tok_dir), "tools": workloads.TOOLS, "cases": cases}
    job_path, out_path = tmp / "vllm_job.json", tmp / "vllm_out.json"
    job_path.write_text(json.dumps(job), encoding="utf-8")
    cmd = [python, str(Path(__file__).with_name("vllm_side.py")), "--job", str(job_path), "--out", str(out_path)]
    try:
        proc = subprocess.run(cmd, timeout=timeout, stdout=subprocess.DEVNULL, stderr=sys.stderr)
    except subprocess.TimeoutExpired:
        return None, f"the vLLM side ran past its {timeout:.0f} s limit"
    if proc.returncode != 0 or not out_path.exists():
        return None, f"the vLLM side exited with status {proc.returncode}"
    return json.loads(out_path.read_text(encoding="utf-8")), ""


def build_bench_peers() -> tuple[Path | None, str]:
    """``cargo build --release`` the bench_peers crate; returns the binary or why it failed."""
    try:
        proc = subprocess.run(
            ["cargo", "build", "--release", "--quiet"],
            cwd=BENCH_PEERS,
            capture_output=True,
            text=True,
            timeout=1800,
        )
    except FileNotFoundError:
        return None, "cargo is not installed"
    except subprocess.TimeoutExpired:
        return None, "building rust/bench_peers took over 30 minutes"
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-5:])
        return None, f"rust/bench_peers (tool-parser 1.10.0) did not build here:\n{tail}"
    exe = BENCH_PEERS / "target" / "release" / ("bench_peers.exe" if os.name == "nt" else "bench_peers")
    return exe, ""


def write_rust_inputs(tmp: Path, items: list[tuple[str, str, bool, str, str]], sub: str = "rust_inputs") -> Path:
    """Write ``(id, parser, dense, size label, text)`` items as bench_peers' manifest folder ``tmp/sub``."""
    folder = tmp / sub if sub else tmp
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for wid, parser, dense, size, text in items:
        name = wid.replace("/", "_") + ".txt"
        (folder / name).write_text(text, encoding="utf-8", newline="")
        rows.append({"id": wid, "parser": parser, "dense": dense, "size": size, "file": name})
    manifest = {"tools": workloads.TOOLS, "workloads": rows}
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return folder


def run_bench_peers(exe: Path, folder: Path, min_time: float, timeout: float) -> tuple[dict | None, str]:
    try:
        proc = subprocess.run(
            [str(exe), "--inputs", str(folder), "--min-time", str(min_time)],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return None, f"bench_peers ran past its {timeout:.0f} s limit"
    sys.stderr.write(proc.stderr[-4000:])
    if proc.returncode != 0:
        return None, f"bench_peers exited with status {proc.returncode}"
    return json.loads(proc.stdout.strip().splitlines()[-1]), ""
