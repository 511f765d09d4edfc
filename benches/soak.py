"""A soak run: ``serve`` for N minutes against atroposlib's ``run-api`` and a stand-in trainer, with faults at random.

Everything runs on 127.0.0.1: ``run-api``, a SCRIPTED vLLM ``/generate`` policy server answering terminal_tasks from
the reference solutions (in this process), ``python -m hermes_env.envs.terminal_tasks serve`` on the ``bwrap`` or
``sandbox`` (slot pool) backend, and a trainer loop here that registers with ``run-api`` and pulls every batch.

Faults, each at its own rate:
- policy faults: a request answered with one of :data:`POLICY_FAULTS` (garbage the environment must reject; the
  group is dropped whole);
- hostile tool calls: a rollout's first turn runs a fork bomb, a command that exhausts memory, or one that fills
  the disk quota (contained by the sandbox's limits; the rollout goes on and scores 0);
- a SIGKILLed slot-pool worker (``--backend sandbox``): its rollouts fail and their groups are dropped;
- a restart of the policy server (down ``--policy-down-s`` seconds): requests in flight fail with a connection
  error, which drops their groups.

Every pulled group is checked: arrays aligned, masks that are -100 or their token id, token ids inside the
vocabulary, finite scores, logprobs aligned and finite, each rollout's last trained token the end of a turn
(no cut-short rollout). The ``serve`` process's RSS, open files, threads and descendant processes are sampled
every ``--sample-s`` seconds; growth is judged over the last three quarters of the run. At the end ``serve`` is
stopped and what it left is listed: processes under sandbox task uids (of any run on the host: run it alone),
processes mentioning the run's directory, run directories of the sandbox layer. Dropped groups are counted by
cause from ``serve``'s log.

Not yet here (issue 26): container kills and the docker backend, the Harbor tasks, tool-server and ``run-api``
restarts.

Run: ``python benches/soak.py --minutes 3 --backend sandbox --out /tmp/soak`` (report.json and rss.png there).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
from hermes_env.env.dataset import load_rows
from hermes_env.envs.terminal_tasks.env import TASKS_PATH
from hermes_env.isolation.process import children
from hermes_env.isolation.users import MAX_UID_BLOCKS, SLOT_UID_BASE, UID_BLOCK, _process_uids
from hermes_env.resources import qwen3_tokenizer
from hermes_env.testing.policies import SolutionPolicy, think, tool_call_text
from hermes_env.testing.scripted_vllm import FAULT_KINDS, ScriptedFault, ScriptedVLLMServer
from hermes_env.testing.trainer_stub import MASKED, check_batch, register

REPO = Path(__file__).resolve().parents[1]
# Garbage a policy server may answer, each of which must get the group dropped whole: the scripted server's
# fault kinds less the transport and timing ones (restarts stand for those here).
POLICY_FAULTS = tuple(
    kind
    for kind in FAULT_KINDS
    if kind not in {"http_500", "empty_completion", "abort", "drop_connection", "slow", "hang"}
)
HOSTILE_COMMANDS = {
    "fork_bomb": "bomb() { bomb | bomb & }; bomb",
    "memory": "python3 -c 'x = bytearray(8 * 1024 ** 3)'",
    "disk": "head -c 4G /dev/zero > fill.bin; ls -la fill.bin",
}
_TASK_UIDS = range(SLOT_UID_BASE, SLOT_UID_BASE + MAX_UID_BLOCKS * UID_BLOCK)


class FaultyPolicy:
    """The tasks' solutions, with policy faults and hostile first turns at random (counted)."""

    def __init__(self, fault_rate: float, hostile_rate: float, seed: int) -> None:
        self.policy = SolutionPolicy(load_rows(str(TASKS_PATH)), seed=seed)
        self.fault_rate, self.hostile_rate = fault_rate, hostile_rate
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.injected: Counter[str] = Counter()

    def __call__(self, request: Any) -> Any:
        answer = self.policy.vllm_responder(request)
        first_turn = request.prompt_text.count("<|im_start|>assistant") == 1
        with self.lock:
            roll = self.rng.random()
            if roll < self.fault_rate:
                kind = self.rng.choice(POLICY_FAULTS)
                self.injected[f"policy:{kind}"] += 1
                return ScriptedFault(kind, answer=answer)  # type: ignore[arg-type]
            if first_turn and roll < self.fault_rate + self.hostile_rate:
                name = self.rng.choice(sorted(HOSTILE_COMMANDS))
                self.injected[f"hostile:{name}"] += 1
                return think("Let me try this.") + tool_call_text("terminal", {"command": HOSTILE_COMMANDS[name]})
        return answer


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def descendants(pid: int) -> list[int]:
    out, level = [], [pid]
    while level:
        level = [c for p in level for c in children(p)]
        out += level
    return out


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def sample(pid: int, started: float) -> dict[str, float] | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    return {
        "t": round(time.monotonic() - started, 1),
        "rss_mib": int(fields["VmRSS"].split()[0]) / 1024,
        "fds": fds,
        "threads": int(fields["Threads"]),
        "descendants": len(descendants(pid)),
    }


class Trainer:
    """Registers with run-api and pulls every batch, checking each group."""

    def __init__(self, api: str, batch_size: int, vocab: int, end_of_turn: set[int]) -> None:
        self.api, self.batch_size, self.vocab, self.end_of_turn = api, batch_size, vocab, end_of_turn
        self.groups = self.rollouts = self.batches = 0
        self.problems: list[str] = []
        self.stop = threading.Event()

    def check_group(self, group: dict[str, Any]) -> list[str]:
        found = list(check_batch([group]).problems)
        for ri, tokens in enumerate(group.get("tokens") or []):
            if any(not 0 <= t < self.vocab for t in tokens):
                found.append(f"rollout {ri}: a token id outside the vocabulary")
            trained = [t for t, m in zip(tokens, group["masks"][ri], strict=False) if m != MASKED]
            if not trained or trained[-1] not in self.end_of_turn:
                found.append(f"rollout {ri}: its last trained token does not end a turn (cut short?)")
        if any(not math.isfinite(float(s)) for s in group.get("scores") or []):
            found.append("a score is not finite")
        for lps in group.get("inference_logprobs") or []:
            if any(not math.isfinite(float(x)) or float(x) > 1.0 for x in lps or []):
                found.append("a logprob is not finite or above 1.0 (the prompt placeholder)")
        return found

    def run(self) -> None:
        with httpx.Client(base_url=self.api, timeout=30) as client:
            register(client, batch_size=self.batch_size, steps=10**6, max_token_len=8192)
            while not self.stop.is_set():
                try:
                    batch = client.get("/batch").json().get("batch")
                except httpx.HTTPError as err:
                    self.problems.append(f"/batch failed: {err}")
                    time.sleep(1)
                    continue
                if not batch:
                    time.sleep(0.5)
                    continue
                self.batches += 1
                for group in batch:
                    self.groups += 1
                    self.rollouts += len(group.get("tokens") or [])
                    self.problems += [f"batch {self.batches}: {p}" for p in self.check_group(group)]


def leftovers(work: Path) -> dict[str, list[str]]:
    """What the run left: ``serve`` ran with ``TMPDIR=work``, so its run directories are under ``work``."""
    uids = {pid: uid for pid, uid in _process_uids().items() if uid in _TASK_UIDS}
    mention = [pid for pid in _process_uids() if pid != os.getpid() and str(work) in cmdline(pid)]
    roots = sorted(str(p) for p in work.glob("hermes-*"))
    return {
        "task_uid_processes": [f"{pid} uid {uid}: {cmdline(pid)[:120]}" for pid, uid in uids.items()],
        "processes_mentioning_the_run": [f"{pid}: {cmdline(pid)[:120]}" for pid in mention],
        "run_directories": roots,
    }


def growth(samples: list[dict[str, float]], key: str) -> float | None:
    """Growth of ``key`` over the last three quarters: the last tenth's mean over the mean around the 25% mark."""
    n = len(samples)
    if n < 20:
        return None
    at = samples[n // 4 - n // 20 : n // 4 + n // 20 + 1]
    end = samples[-max(1, n // 10) :]
    base = sum(s[key] for s in at) / len(at)
    return round(sum(s[key] for s in end) / len(end) / base - 1, 4) if base else None


def plot(samples: list[dict[str, float]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(4, 1, figsize=(8, 8), sharex=True)
    for ax, (key, label) in zip(
        axes, [("rss_mib", "RSS (MiB)"), ("fds", "open files"), ("threads", "threads"), ("descendants", "processes")],
        strict=True,
    ):
        ax.plot([s["t"] / 60 for s in samples], [s[key] for s in samples])
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[-1].set_xlabel("minutes")
    fig.suptitle("serve under faults: the environment process")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def soak(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="soak-"))
    work.chmod(0o711)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tok = qwen3_tokenizer()
    end_of_turn = {tok.convert_tokens_to_ids("<|im_end|>")}
    if tok.eos_token_id is not None:
        end_of_turn.add(int(tok.eos_token_id))
    policy = FaultyPolicy(args.fault_rate, args.hostile_rate, args.seed)
    api_port = free_port()
    api = f"http://127.0.0.1:{api_port}"
    run_api = subprocess.Popen(
        [str(Path(sys.executable).with_name("run-api")), "--host", "127.0.0.1", "--port", str(api_port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    server = ScriptedVLLMServer(tok, policy, model_name="soak", max_recorded=64).start()
    options = {"slots_per_worker": 4, "min_workers": 2, "max_workers": 2} if args.backend == "sandbox" else {}
    config = work / "config.yaml"
    config.write_text(json.dumps({  # JSON is YAML
        "env": {"group_size": args.group_size, "batch_size": args.batch_size, "total_steps": 10**6,
                "max_agent_turns": 4, "terminal_backend": args.backend, "terminal_backend_options": options,
                "terminal_timeout": 20, "rollout_timeout": 120, "use_wandb": False, "include_messages": False,
                "ensure_scores_are_not_same": False, "max_num_workers": args.concurrency, "max_token_length": 8192,
                "tokenizer_name": "bundled:qwen3", "rollout_server_url": api},
        "openai": {"server_type": "vllm", "base_url": server.base_url, "model_name": "soak", "api_key": "x",
                   "tokenizer_name": "bundled:qwen3", "timeout": 30},
    }))  # fmt: skip
    trainer = Trainer(api, args.batch_size, len(tok), end_of_turn)
    deadline = time.monotonic() + 60
    while True:  # run-api takes a few seconds to answer
        try:
            httpx.get(f"{api}/status", timeout=1)
            break
        except httpx.HTTPError:
            if time.monotonic() > deadline or run_api.poll() is not None:
                raise RuntimeError("run-api did not start") from None
            time.sleep(0.3)
    trainer_thread = threading.Thread(target=trainer.run, daemon=True)
    trainer_thread.start()
    log = (out / "serve.log").open("w")
    serve = subprocess.Popen(
        [sys.executable, "-m", "hermes_env.envs.terminal_tasks", "serve", "--config", str(config)],
        cwd=REPO, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        env={**os.environ, "WANDB_MODE": "disabled", "PYTHONPATH": str(REPO / "python"), "TMPDIR": str(work)},
    )  # fmt: skip
    started = time.monotonic()
    samples: list[dict[str, float]] = []
    killed_workers = policy_restarts = 0
    next_kill = started + args.worker_kill_every_s
    next_restart = started + args.policy_restart_every_s if args.policy_restart_every_s > 0 else math.inf
    try:
        while time.monotonic() - started < args.minutes * 60 and serve.poll() is None:
            point = sample(serve.pid, started)
            if point is not None:
                samples.append(point)
            if args.backend == "sandbox" and time.monotonic() >= next_kill:
                workers = [p for p in descendants(serve.pid) if "hermes_env.sandbox.server" in cmdline(p)]
                if workers:
                    os.kill(random.choice(workers), signal.SIGKILL)
                    killed_workers += 1
                next_kill = time.monotonic() + args.worker_kill_every_s
            if time.monotonic() >= next_restart:
                port = server.port
                server.stop()
                time.sleep(args.policy_down_s)
                server = ScriptedVLLMServer(tok, policy, port=port, model_name="soak", max_recorded=64).start()
                policy_restarts += 1
                next_restart = time.monotonic() + args.policy_restart_every_s
            time.sleep(args.sample_s)
        serve_alive = serve.poll() is None
        log.flush()
        stop_at = (out / "serve.log").stat().st_size  # drops after this are the stop's, not a fault's
        serve.send_signal(signal.SIGTERM)
        try:
            serve.wait(120)
        except subprocess.TimeoutExpired:
            serve.kill()
            serve.wait(30)
    finally:
        trainer.stop.set()
        trainer_thread.join(40)
        if serve.poll() is None:
            serve.kill()
        run_api.terminate()
        run_api.wait(30)
        server.stop()
        log.close()
    time.sleep(2)
    left = leftovers(work)
    text = (out / "serve.log").read_bytes()[:stop_at].decode(errors="replace")
    dropped = Counter(m.group(1) for m in re.finditer(r"dropping group \d+.*?rollouts failed; (\w+):", text))
    after_stop = (out / "serve.log").read_bytes()[stop_at:].decode(errors="replace")
    report = {
        "minutes": args.minutes,
        "backend": args.backend,
        "serve_ran_to_the_end": serve_alive,
        "groups_pulled": trainer.groups,
        "rollouts_pulled": trainer.rollouts,
        "batches_pulled": trainer.batches,
        "bad_groups": len(trainer.problems),
        "problems": trainer.problems[:50],
        "faults_injected": dict(sorted(policy.injected.items())),
        "workers_killed": killed_workers,
        "policy_server_restarts": policy_restarts,
        "groups_dropped_by_cause": dict(dropped.most_common()),
        "groups_dropped_while_stopping": after_stop.count("dropping group"),
        "serve_exit_status": serve.returncode,
        "growth_last_three_quarters": {k: growth(samples, k) for k in ("rss_mib", "fds", "threads")},
        "first_sample": samples[0] if samples else None,
        "last_sample": samples[-1] if samples else None,
        "leftovers": left,
    }
    (out / "samples.json").write_text(json.dumps(samples))
    (out / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    if samples:
        plot(samples, out / "rss.png")
    if not any(left.values()):
        subprocess.run(["rm", "-rf", str(work)], check=False)
    return report


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--minutes", type=float, default=60)
    p.add_argument("--backend", choices=("bwrap", "sandbox"), default="sandbox")
    p.add_argument("--fault-rate", type=float, default=0.03, help="policy faults per model request")
    p.add_argument("--hostile-rate", type=float, default=0.03, help="hostile first turns per rollout")
    p.add_argument("--worker-kill-every-s", type=float, default=90, help="seconds between SIGKILLed slot workers")
    p.add_argument("--policy-restart-every-s", type=float, default=150, help="seconds between restarts (0: none)")
    p.add_argument("--policy-down-s", type=float, default=3.0, help="how long the policy server stays down")
    p.add_argument("--group-size", type=int, default=4)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--concurrency", type=int, default=8, help="groups in flight (serve's max_num_workers)")
    p.add_argument("--sample-s", type=float, default=5.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="soak-out")
    report = soak(p.parse_args())
    print(json.dumps(report, indent=2))
    ok = report["bad_groups"] == 0 and not any(report["leftovers"].values()) and report["groups_pulled"] > 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
