"""A soak run: several ``serve`` processes for N minutes against atroposlib's ``run-api`` and a stand-in trainer,
with faults injected at random.

Everything runs on 127.0.0.1: ``run-api``; SCRIPTED vLLM ``/generate`` policy servers (in this process) answering
from the tasks' reference solutions; a tool server (``python -m hermes_env.slot_pool.tool_server``) serving
``soak_note``; one ``serve`` per backend of ``--backends``:

- ``sandbox``: terminal_tasks on the slot pool; ``bwrap``: terminal_tasks in bubblewrap (both with the tool server);
- ``docker``: the Harbor env on the repo's small Harbor tasks (``tests/environments/harbor/tasks``: count-words,
  offline-note, ubuntu-jq), one container per rollout (podman or docker), the oracle's solution as the policy;

and a trainer thread here that registers with ``run-api`` and pulls every batch.

Faults, each at its own rate (``--*-every-s`` is a mean; each interval is drawn from 0.5x to 1.5x of it):
- policy faults: a request answered with one of :data:`POLICY_FAULTS` (garbage the environment must reject; the
  group is dropped whole, as ``policy_bad_response``);
- hostile tool calls: a rollout's first turn runs a fork bomb, a command that exhausts memory, or one that fills
  the disk quota (the disk one on the bubblewrap backends only: a container's disk has no quota here); contained by
  the sandbox's limits, the rollout goes on and scores 0, except in a container, where the docker backend fails a
  rollout whose command the OOM killer ended (``sandbox_failed``);
- tool-server calls: a rollout's first turn calls ``soak_note`` on the tool server; during a restart of the tool
  server the call fails as a tool error and the rollout goes on;
- a SIGKILLed slot-pool worker (``sandbox``) and a killed rollout container (``docker``, ``podman kill``): the
  rollouts on it fail and their groups are dropped as ``sandbox_failed``;
- a restart of the policy servers (down ``--policy-down-s``): requests in flight fail, which drops their groups as
  ``policy_connection_error``;
- a restart of the tool server (down ``--tool-server-down-s``);
- a restart of ``run-api`` (SIGKILL, down ``--run-api-down-s``, started again on the same port): it forgets
  everything; the trainer registers again, each ``serve`` holds its finished groups, registers again and sends them.
  Just before the kill the ``serve`` processes are frozen (SIGSTOP, half a second) and the trainer pulls every whole
  batch; the groups left in ``run-api``'s queue (less than one batch) die with it and are counted as such.

Every pulled group is checked: arrays aligned, masks that are -100 or their token id, token ids inside the
vocabulary, finite scores, logprobs aligned and finite, each rollout's last trained token the end of a turn (no
cut-short rollout), and a group id (``group_overrides["hermes_env_group_id"]``) never seen before. Groups sent (each
``serve``'s last line) are matched against groups pulled, lost with ``run-api``'s queue, and left queued at the end.
Dropped groups are counted by cause from each ``serve``'s log and matched against the faults injected into it. Each
``serve`` process's RSS, open files, threads and descendant processes are sampled every ``--sample-s`` seconds;
growth is judged over the last three quarters of the run. At the end every ``serve`` is stopped (SIGTERM) and what
was left is listed: orphaned processes under sandbox task uids, processes mentioning the run's directory or working
in it (podman's ``conmon`` names neither), run directories, containers owned by the run's ``serve`` processes.

Run: ``python benches/soak.py --minutes 3 --out /tmp/soak`` (report.json, soak.png and the logs there). Exits 1 when
a pulled group is bad or duplicated, a group is lost, a drop has no injected fault to explain it, or something was
left behind.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import random
import re
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The serve processes run this checkout's package (PYTHONPATH=python): so does this process.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

import httpx
from hermes_env.env.dataset import load_rows
from hermes_env.env.run_api_link import GROUP_ID_KEY
from hermes_env.environments.terminal_tasks.env import TASKS_PATH
from hermes_env.isolation.process import children, command_line, pids_working_in
from hermes_env.isolation.users import MAX_UID_BLOCKS, SLOT_UID_BASE, UID_BLOCK, _process_uids
from hermes_env.resources import qwen3_tokenizer
from hermes_env.slot_pool.tool_server import TOKEN_ENV, ExternalTool
from hermes_env.testing.policies import SolutionPolicy, think, tool_call_text
from hermes_env.testing.scripted_vllm import FAULT_KINDS, ScriptedFault, ScriptedVLLMServer
from hermes_env.testing.trainer_stub import MASKED, check_batch

REPO = Path(__file__).resolve().parents[1]
BACKENDS = ("sandbox", "bwrap", "docker")
HARBOR_TASKS_DIR = REPO / "tests" / "environments" / "harbor" / "tasks"
HARBOR_TASKS = ("count-words", "offline-note", "ubuntu-jq")
# Garbage a policy server may answer, each of which must get the group dropped whole: the scripted server's
# fault kinds less the transport and timing ones (restarts stand for those here).
POLICY_FAULTS = tuple(
    kind
    for kind in FAULT_KINDS
    if kind not in {"http_500", "empty_completion", "abort", "drop_connection", "slow", "hang"}
)
HOSTILE_COMMANDS = {
    "fork_bomb": "bomb() { bomb | bomb & }; bomb",
    # tail keeps a line in memory, and /dev/zero has no newline: no interpreter needed (task images lack python).
    "memory": "head -c 8G /dev/zero | tail > /dev/null",
    "disk": "head -c 4G /dev/zero > fill.bin; ls -la fill.bin",
}
TOOL_NAME = "soak_note"
SLOTS_PER_WORKER = 4
# What each injected fault may cost, by the drop cause serve logs, and at most how many groups one fault drops: a
# policy fault its group (a bad response); a restart of the policy server the groups in flight (connection errors);
# a killed worker the groups of its slots, a killed container its rollout's group (failed sandboxes). ``None``: the
# groups in flight of that serve. Hostile commands, tool-server and run-api restarts drop nothing.
CAUSE_FAULTS: dict[str, dict[str, int | None]] = {
    "policy_bad_response": {"policy_fault": 1},
    "policy_connection_error": {"policy_restart": None},
    "sandbox_failed": {"worker_kill": SLOTS_PER_WORKER, "container_kill": 1, "hostile_memory_in_a_container": 1},
}
# Growth judged against --growth-limit, in runs of at least this many minutes (a shorter one is mostly warm-up).
GROWTH_JUDGED = ("rss_mib", "fds")
GROWTH_JUDGED_FROM_MINUTES = 10
_TASK_UIDS = range(SLOT_UID_BASE, SLOT_UID_BASE + MAX_UID_BLOCKS * UID_BLOCK)


def _note(args: dict[str, Any]) -> str:
    return f"noted: {str(args.get('text', ''))[:200]}"


#: Served by the soak's tool server (``--tools soak:TOOL_SERVER_TOOLS``).
TOOL_SERVER_TOOLS = [
    ExternalTool(
        TOOL_NAME, _note, "Keep a short note (served by the tool server).",
        {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    )
]  # fmt: skip


class FaultyPolicy:
    """Tasks' solutions, with policy faults, hostile first turns and tool-server calls at random (counted)."""

    def __init__(
        self, rows: list[dict[str, Any]], args: argparse.Namespace, *, hostile: list[str], tool_server: bool
    ) -> None:
        self.policy = SolutionPolicy(rows, seed=args.seed)
        self.fault_rate, self.hostile_rate = args.fault_rate, args.hostile_rate
        self.tool_rate = args.tool_call_rate if tool_server else 0.0
        self.hostile = hostile
        self.rng = random.Random(args.seed)
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
            if not first_turn:
                return answer
            roll -= self.fault_rate
            if roll < self.hostile_rate:
                name = self.rng.choice(self.hostile)
                self.injected[f"hostile:{name}"] += 1
                return think("Let me try this.") + tool_call_text("terminal", {"command": HOSTILE_COMMANDS[name]})
            if roll - self.hostile_rate < self.tool_rate:
                self.injected["tool_server_call"] += 1
                return think("A note first.") + tool_call_text(TOOL_NAME, {"text": "starting the task"})
        return answer

    def policy_faults(self) -> int:
        return sum(n for k, n in self.injected.items() if k.startswith("policy:"))


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


def slot_workers(serve_pid: int) -> list[int]:
    """The slot-pool workers ``serve`` started: its children only. A worker's own children, forked to run a
    command, carry the worker's command line until they exec; killing one of those fails that command, not the
    worker (and the rollout whose setup command it was is dropped as ``workspace_setup_failed``)."""
    return [p for p in children(serve_pid) if "hermes_env.slot_pool.server" in cmdline(p)]


def cmdline(pid: int) -> str:
    return " ".join(command_line(pid))


def fd_kind(target: str) -> str:
    """``socket``, ``pipe``, ``anon`` (eventfd, epoll ...) or ``file``, from an fd's link target."""
    if target.startswith(("socket:", "pipe:")):
        return target.split(":", 1)[0]
    return "anon" if target.startswith("anon_inode:") else "file"


def sample(pid: int, started: float) -> dict[str, float] | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        kinds: Counter[str] = Counter()
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                kinds[fd_kind(os.readlink(f"/proc/{pid}/fd/{fd}"))] += 1
    except OSError:
        return None
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    return {
        "t": round(time.monotonic() - started, 1),
        "rss_mib": int(fields["VmRSS"].split()[0]) / 1024,
        "fds": sum(kinds.values()),
        **{f"fds_{kind}": kinds[kind] for kind in ("socket", "pipe", "anon", "file")},
        "threads": int(fields["Threads"]),
        "descendants": len(descendants(pid)),
    }


def wait_until_answers(url: str, proc: subprocess.Popen[bytes], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.HTTPError:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError(f"{what} did not start (exit status {proc.poll()})") from None
            time.sleep(0.3)


def stop_process(proc: subprocess.Popen[bytes] | None, sig: int = signal.SIGTERM, timeout: float = 30) -> None:
    """Signal a process started with ``start_new_session`` (its whole group) and wait for it."""
    if proc is None or proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)


def start_policy_server(tok: Any, policy: FaultyPolicy, port: int) -> ScriptedVLLMServer:
    """A scripted vLLM server (``port`` 0: a free one); the same port again after a restart, retried while the
    old socket lets go."""
    deadline = time.monotonic() + 10
    while True:
        try:
            return ScriptedVLLMServer(tok, policy, port=port, model_name="soak", max_recorded=64).start()
        except (OSError, RuntimeError):  # the port not yet free again
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


class RunApi:
    """atroposlib's ``run-api`` on a fixed port, killed and started again on demand."""

    def __init__(self, port: int, log: Path) -> None:
        self.port, self.log = port, log
        self.url = f"http://127.0.0.1:{port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                [str(Path(sys.executable).with_name("run-api")), "--host", "127.0.0.1", "--port", str(self.port)],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        wait_until_answers(f"{self.url}/status", self.proc, "run-api")

    def kill(self) -> None:
        stop_process(self.proc, signal.SIGKILL)


class ToolServer:
    """``python -m hermes_env.slot_pool.tool_server`` serving :data:`TOOL_SERVER_TOOLS` on a fixed port."""

    def __init__(self, port: int, token: str, log: Path) -> None:
        self.port, self.token, self.log = port, token, log
        self.url = f"http://127.0.0.1:{port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {**os.environ, TOKEN_ENV: self.token, "PYTHONPATH": f"{REPO / 'benches'}:{REPO / 'python'}"}
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "hermes_env.slot_pool.tool_server", "--port", str(self.port),
                 "--tools", "soak:TOOL_SERVER_TOOLS"],
                stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
            )  # fmt: skip
        wait_until_answers(f"{self.url}/health", self.proc, "the tool server")

    def stop(self) -> None:
        stop_process(self.proc, signal.SIGKILL)


class Trainer:
    """Registers with run-api (again after a restart) and pulls every batch, checking each group."""

    def __init__(self, api: str, batch_size: int, vocab: int, end_of_turn: set[int]) -> None:
        self.api, self.batch_size, self.vocab, self.end_of_turn = api, batch_size, vocab, end_of_turn
        self.groups = self.rollouts = self.batches = self.registrations = 0
        self.ids: Counter[str] = Counter()
        self.problems: list[str] = []
        self.stop = threading.Event()
        self.lock = threading.Lock()  # held around each pull; the harness holds it to drain before a kill
        self.client = httpx.Client(base_url=api, timeout=30)

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
        group_id = (group.get("group_overrides") or {}).get(GROUP_ID_KEY)
        if not group_id:
            found.append(f"no group id (group_overrides[{GROUP_ID_KEY!r}])")
        else:
            self.ids[group_id] += 1
            if self.ids[group_id] == 2:
                found.append(f"group {group_id} pulled twice")
        return found

    def register(self) -> None:
        """As atroposlib's trainers do: ``/register``, then a first ``/batch`` that marks the run started."""
        self.client.post("/register", json={
            "wandb_group": "soak", "wandb_project": "soak", "batch_size": self.batch_size, "max_token_len": 8192,
            "checkpoint_dir": tempfile.gettempdir(), "save_checkpoint_interval": -1, "starting_step": 0,
            "num_steps": 10**6,
        }).raise_for_status()  # fmt: skip
        self.registrations += 1
        self.pull_once()

    def pull_once(self) -> bool:
        """One ``/batch``; True when it held a batch. Registers when run-api does not know this trainer."""
        answer = self.client.get("/batch").json()
        if answer.get("status") == "error":  # a fresh run-api: "Trainer not registered"
            self.register()
            return True
        batch = answer.get("batch")
        if not batch:
            return False
        self.batches += 1
        for group in batch:
            self.groups += 1
            self.rollouts += len(group.get("tokens") or [])
            self.problems += [f"batch {self.batches}: {p}" for p in self.check_group(group)]
        return True

    def drain(self) -> None:
        """Pull until run-api has no whole batch (the caller holds ``lock``)."""
        while self.pull_once():
            pass

    def run(self) -> None:
        while not self.stop.is_set():
            with self.lock:
                try:
                    got = self.pull_once()
                except (httpx.HTTPError, ValueError):  # run-api down or restarting
                    got = False
                except Exception as err:  # noqa: BLE001 - a trainer that stops pulling would stall the soak unseen
                    self.problems.append(f"the trainer's pull failed: {type(err).__name__}: {err}")
                    got = False
            if not got:
                time.sleep(0.5)


@dataclass
class Serve:
    """One ``serve`` process and what was done to it."""

    backend: str
    policy: FaultyPolicy
    proc: subprocess.Popen[bytes]
    log_path: Path
    owner: str | None = None  # the owner label of its containers (docker)
    samples: list[dict[str, float]] = field(default_factory=list)
    faults: Counter[str] = field(default_factory=Counter)
    stop_at: int = 0


def serve_config(backend: str, args: argparse.Namespace, api: str, policy_url: str, tool_server: ToolServer) -> dict:
    env: dict[str, Any] = {
        "group_size": args.group_size, "batch_size": args.batch_size, "total_steps": 10**6, "max_agent_turns": 4,
        "terminal_backend": backend, "use_wandb": False, "include_messages": False,
        "ensure_scores_are_not_same": False, "max_num_workers": args.concurrency, "max_token_length": 8192,
        "tokenizer_name": "bundled:qwen3", "rollout_server_url": api, "rollout_timeout": 180,
    }  # fmt: skip
    if backend == "docker":
        # A container per rollout is slow to start: smaller groups, fewer at once (run-api mixes group sizes).
        env.update(tasks_dir=str(HARBOR_TASKS_DIR), task_names=",".join(HARBOR_TASKS), terminal_timeout=60,
                   reward_timeout=300, group_size=max(2, args.group_size // 2),
                   max_num_workers=max(1, args.concurrency // 2))  # fmt: skip
    else:
        env.update(terminal_timeout=20, tool_server_url=tool_server.url, tool_server_token=tool_server.token)
        if backend == "sandbox":
            env["terminal_backend_options"] = {"slots_per_worker": SLOTS_PER_WORKER, "min_workers": 2,
                                               "max_workers": 2}  # fmt: skip
    return {
        "env": env,
        "openai": {"server_type": "vllm", "base_url": policy_url, "model_name": "soak", "api_key": "x",
                   "tokenizer_name": "bundled:qwen3", "timeout": 60},
    }  # fmt: skip


def container_engine() -> Any:
    from hermes_env.containers.engine import detect_engine

    return detect_engine()


def harbor_problem() -> str | None:
    """Why the docker backend cannot run the soak's Harbor tasks here (no engine, an image that does not build), or
    None once their images are built (cached: a build takes minutes and must not happen during the soak)."""
    import asyncio

    from hermes_env.environments.harbor.runner import HarborRunner
    from hermes_env.environments.harbor.task import load_tasks
    from hermes_env.errors import ContainerError

    try:
        runner = HarborRunner(container_engine())
        tasks = load_tasks(str(HARBOR_TASKS_DIR), list(HARBOR_TASKS))

        async def prepare_all() -> None:
            for task in tasks:
                await runner.prepare(task)

        asyncio.run(prepare_all())
    except (ContainerError, RuntimeError, TimeoutError) as err:
        return f"{type(err).__name__}: {err}"
    return None


def owned_containers(owner: str, *, running_only: bool) -> list[str]:
    from hermes_env.containers.engine import OWNER_LABEL

    flags = ["-q"] if running_only else ["-aq"]
    result = container_engine().run_sync("ps", *flags, "--filter", f"label={OWNER_LABEL}={owner}", check=False)
    return result.text.split()


def parent(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[-1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def leftovers(work: Path, owners: list[str], pids: list[int]) -> dict[str, list[str]]:
    """What the run left: the ``serve`` processes ran with ``TMPDIR=work``, so their run directories are there.

    A process under a task uid counts when it was orphaned (its parent is init or this process) or names the run's
    directory: other runs' live sandboxes on this host (their parent is their own sandbox) are not this run's."""
    uids = {
        pid: uid
        for pid, uid in _process_uids().items()
        if uid in _TASK_UIDS and (parent(pid) in (1, os.getpid()) or str(work) in cmdline(pid))
    }
    mention = [pid for pid in _process_uids() if pid != os.getpid() and str(work) in cmdline(pid)]
    # Named nowhere on their command line, found by where they work: podman's conmon (and its ``runc init``) of a
    # container whose start was cut short works in the docker backend's run directory, deleted or not.
    working = pids_working_in(work)
    return {
        "task_uid_processes": [f"{pid} uid {uid}: {cmdline(pid)[:120]}" for pid, uid in uids.items()],
        "processes_mentioning_the_run": [f"{pid}: {cmdline(pid)[:120]}" for pid in mention],
        "processes_working_in_the_run": [f"{pid}: {cmdline(pid)[:120]}" for pid in working],
        "run_directories": sorted(str(p) for p in work.glob("hermes-*")),
        "containers": [c for owner in owners for c in owned_containers(owner, running_only=False)],
        "processes_started_by_the_soak": [f"{pid}: {cmdline(pid)[:120]}" for pid in pids if cmdline(pid)],
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


def plot(serves: list[Serve], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(4, 1, figsize=(8, 9), sharex=True)
    keys = [("rss_mib", "RSS (MiB)"), ("fds", "open files"), ("threads", "threads"), ("descendants", "processes")]
    for ax, (key, label) in zip(axes, keys, strict=True):
        for serve in serves:
            ax.plot([s["t"] / 60 for s in serve.samples], [s[key] for s in serve.samples], label=serve.backend)
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0].legend(loc="upper left", fontsize=8)
    axes[-1].set_xlabel("minutes")
    fig.suptitle("serve under faults: each environment process")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


class Schedule:
    """When each fault fires next: a mean interval, each one drawn from 0.5x to 1.5x of it (0: never)."""

    def __init__(self, every: dict[str, float], rng: random.Random, started: float) -> None:
        self.every, self.rng = every, rng
        self.next = {k: self._after(started, k) for k in every}

    def _after(self, now: float, kind: str) -> float:
        return now + self.every[kind] * self.rng.uniform(0.5, 1.5) if self.every[kind] > 0 else math.inf

    def due(self, kind: str) -> bool:
        now = time.monotonic()
        if now < self.next[kind]:
            return False
        self.next[kind] = self._after(now, kind)
        return True


_DROP = re.compile(r"dropping group \d+.*?rollouts failed; (\w+):[^\n]*")


def drops_by_cause(text: str) -> Counter[str]:
    return Counter(m.group(1) for m in _DROP.finditer(text))


def first_drop(text: str, cause: str) -> str:
    """serve's log line of the first group dropped as ``cause`` (what an unexplained drop quotes)."""
    return next((m.group(0)[:400] for m in _DROP.finditer(text) if m.group(1) == cause), "")


def soak(args: argparse.Namespace) -> dict[str, Any]:
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    unknown = sorted(set(backends) - set(BACKENDS))
    if unknown or not backends:
        raise SystemExit(f"error: --backends {args.backends!r}: choose from {', '.join(BACKENDS)} (comma-separated)")
    if "docker" in backends and (problem := harbor_problem()) is not None:
        raise SystemExit(f"error: the docker backend cannot run the Harbor tasks here ({problem}); "
                         "leave docker out of --backends")  # fmt: skip
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="soak-"))
    work.chmod(0o711)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tok = qwen3_tokenizer()
    end_of_turn = {tok.convert_tokens_to_ids("<|im_end|>")}
    if tok.eos_token_id is not None:
        end_of_turn.add(int(tok.eos_token_id))

    run_api = RunApi(free_port(), out / "run-api.log")
    run_api.start()
    tool_server = ToolServer(free_port(), secrets.token_hex(16), out / "tool-server.log")
    tool_server.start()
    terminal_rows = load_rows(str(TASKS_PATH))
    policies: dict[str, FaultyPolicy] = {}
    servers: dict[str, ScriptedVLLMServer] = {}
    if {"sandbox", "bwrap"} & set(backends):
        policies["terminal_tasks"] = FaultyPolicy(terminal_rows, args, hostile=sorted(HOSTILE_COMMANDS),
                                                  tool_server=True)  # fmt: skip
    if "docker" in backends:
        from hermes_env.environments.harbor.scripted import scripted_rows
        from hermes_env.environments.harbor.task import load_tasks

        rows = scripted_rows(load_tasks(str(HARBOR_TASKS_DIR), list(HARBOR_TASKS)))
        hostile = sorted(set(HOSTILE_COMMANDS) - {"disk"})
        policies["harbor"] = FaultyPolicy(rows, args, hostile=hostile, tool_server=False)
    for name, policy in policies.items():
        servers[name] = start_policy_server(tok, policy, 0)

    trainer = Trainer(run_api.url, args.batch_size, len(tok), end_of_turn)
    trainer_thread = threading.Thread(target=trainer.run, daemon=True)
    trainer_thread.start()
    started = time.monotonic()
    serves: list[Serve] = []
    for backend in backends:
        policy_name = "harbor" if backend == "docker" else "terminal_tasks"
        config = work / f"config-{backend}.yaml"
        config.write_text(json.dumps(serve_config(backend, args, run_api.url, servers[policy_name].base_url,
                                                  tool_server)))  # JSON is YAML  # fmt: skip
        module = "hermes_env.environments.harbor" if backend == "docker" else "hermes_env.environments.terminal_tasks"
        log_path = out / f"serve-{backend}.log"
        with log_path.open("wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", module, "serve", "--config", str(config)],
                cwd=REPO, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                env={**os.environ, "WANDB_MODE": "disabled", "PYTHONPATH": str(REPO / "python"), "TMPDIR": str(work)},
            )  # fmt: skip
        serve = Serve(backend, policies[policy_name], proc, log_path)
        if backend == "docker":
            from hermes_env.containers.engine import owner_token

            serve.owner = owner_token(proc.pid)
        serves.append(serve)

    schedule = Schedule({
        "worker_kill": args.worker_kill_every_s if "sandbox" in backends else 0,
        "container_kill": args.container_kill_every_s if "docker" in backends else 0,
        "policy_restart": args.policy_restart_every_s,
        "tool_server_restart": args.tool_server_restart_every_s,
        "run_api_restart": args.run_api_restart_every_s,
    }, rng, started)  # fmt: skip
    injected: Counter[str] = Counter()
    lost_in_run_api_queue = 0
    events: list[str] = []

    def event(text: str) -> None:
        events.append(f"{time.monotonic() - started:7.1f}s {text}")

    try:
        while time.monotonic() - started < args.minutes * 60 and all(s.proc.poll() is None for s in serves):
            for serve in serves:
                point = sample(serve.proc.pid, started)
                if point is not None:
                    serve.samples.append(point)
            if schedule.due("worker_kill"):
                serve = next(s for s in serves if s.backend == "sandbox")
                workers = slot_workers(serve.proc.pid)
                if workers:
                    victim = rng.choice(workers)
                    os.kill(victim, signal.SIGKILL)
                    serve.faults["worker_kill"] += 1
                    injected["worker_kill"] += 1
                    event(f"SIGKILL slot worker {victim}")
            if schedule.due("container_kill"):
                serve = next(s for s in serves if s.backend == "docker")
                running = owned_containers(serve.owner or "", running_only=True)
                if running:
                    victim = rng.choice(running)
                    container_engine().run_sync("kill", victim, check=False)
                    serve.faults["container_kill"] += 1
                    injected["container_kill"] += 1
                    event(f"killed container {victim[:12]}")
            if schedule.due("policy_restart"):
                for server in servers.values():
                    server.stop()
                time.sleep(args.policy_down_s)
                for name, server in list(servers.items()):
                    servers[name] = start_policy_server(tok, policies[name], server.port)
                for serve in serves:
                    serve.faults["policy_restart"] += 1
                injected["policy_restart"] += 1
                event("restarted the policy servers")
            if schedule.due("tool_server_restart"):
                tool_server.stop()
                time.sleep(args.tool_server_down_s)
                tool_server.start()
                injected["tool_server_restart"] += 1
                event("restarted the tool server")
            if schedule.due("run_api_restart"):
                # The serve processes are frozen (SIGSTOP, their sandboxes run on) for the instant it takes to count
                # run-api's queue and kill it: a group accepted after the count would be lost uncounted.
                frozen = [s.proc.pid for s in serves if s.proc.poll() is None]
                for pid in frozen:
                    os.kill(pid, signal.SIGSTOP)
                try:
                    time.sleep(0.5)  # sends already on the wire arrive (or stay incomplete, and are sent again)
                    with trainer.lock:
                        with contextlib.suppress(httpx.HTTPError, ValueError):
                            trainer.drain()
                        queued = int(httpx.get(f"{run_api.url}/status", timeout=10).json().get("queue_size", 0))
                        run_api.kill()
                finally:
                    for pid in frozen:
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(pid, signal.SIGCONT)
                lost_in_run_api_queue += queued
                time.sleep(args.run_api_down_s)
                run_api.start()
                injected["run_api_restart"] += 1
                event(f"restarted run-api ({queued} groups were in its queue)")
            time.sleep(args.sample_s)
        serves_alive = {s.backend: s.proc.poll() is None for s in serves}
        for serve in serves:
            serve.stop_at = serve.log_path.stat().st_size  # drops after this are the stop's, not a fault's
            if serve.proc.poll() is None:
                os.killpg(serve.proc.pid, signal.SIGTERM)
        for serve in serves:
            try:
                serve.proc.wait(180)
            except subprocess.TimeoutExpired:
                stop_process(serve.proc, signal.SIGKILL)
        time.sleep(1)
        with trainer.lock:
            trainer.drain()
            queued_at_end = int(httpx.get(f"{run_api.url}/status", timeout=10).json().get("queue_size", 0))
    finally:
        trainer.stop.set()
        trainer_thread.join(40)
        trainer.client.close()
        for serve in serves:
            stop_process(serve.proc, signal.SIGKILL)
        run_api.kill()
        tool_server.stop()
        for server in servers.values():
            server.stop()
    time.sleep(2)
    pids = [p.pid for p in (run_api.proc, tool_server.proc) if p is not None]
    left = leftovers(work, [s.owner for s in serves if s.owner], pids)

    per_serve: dict[str, Any] = {}
    sent_total = unsent_total = 0
    unexplained: list[str] = []
    for serve in serves:
        raw = serve.log_path.read_bytes()
        before, after = raw[: serve.stop_at].decode(errors="replace"), raw[serve.stop_at :].decode(errors="replace")
        dropped = drops_by_cause(before)
        sent_line = re.search(r"serve: (\d+) groups sent to run-api(?:, (\d+) refused by it)?; (\d+) finished", after)
        sent, refused, unsent = (int(sent_line.group(i) or 0) for i in (1, 2, 3)) if sent_line else (0, 0, 0)
        sent_total += sent
        unsent_total += unsent
        faults = Counter(serve.faults)
        faults["policy_fault"] = serve.policy.policy_faults()
        if serve.backend == "docker":  # the docker backend fails a rollout whose command the OOM killer ended
            faults["hostile_memory_in_a_container"] = serve.policy.injected["hostile:memory"]
        in_flight = int(serve_config(serve.backend, args, "", "", tool_server)["env"]["max_num_workers"])
        for cause, n in dropped.items():
            costs = CAUSE_FAULTS.get(cause, {})
            most = sum(faults[k] * (in_flight if each is None else each) for k, each in costs.items())
            if n > most:
                unexplained.append(f"{serve.backend}: {n} groups dropped as {cause}; the faults that cause it "
                                   f"({', '.join(f'{k} {faults[k]}' for k in costs) or 'none known'}) explain at "
                                   f"most {most}; the first: {first_drop(before, cause)!r}")  # fmt: skip
        if not sent_line:
            unexplained.append(f"{serve.backend}: serve did not say how many groups it sent (see {serve.log_path})")
        per_serve[serve.backend] = {
            "ran_to_the_end": serves_alive[serve.backend],
            "exit_status": serve.proc.returncode,
            "groups_sent": sent,
            "groups_refused_by_run_api": refused,
            "finished_groups_not_sent_at_stop": unsent,
            "groups_dropped_by_cause": dict(dropped.most_common()),
            "groups_dropped_while_stopping": after.count("dropping group"),
            "faults_injected": {k: v for k, v in sorted(faults.items()) if v},
            "run_api_outages_seen": before.count("unreachable (") + before.count("/status-env failed"),
            "growth_last_three_quarters": {k: growth(serve.samples, k) for k in ("rss_mib", "fds", "threads")},
            "first_sample": serve.samples[0] if serve.samples else None,
            "last_sample": serve.samples[-1] if serve.samples else None,
            "max": {k: max((s[k] for s in serve.samples), default=None) for k in ("rss_mib", "fds", "threads",
                                                                                    "descendants")},
        }  # fmt: skip
    duplicates = sum(n - 1 for n in trainer.ids.values() if n > 1)
    unique_pulled = len(trainer.ids)
    lost = sent_total - unique_pulled - lost_in_run_api_queue - queued_at_end
    report = {
        "minutes": args.minutes,
        "backends": backends,
        "growth_limit": args.growth_limit,
        "groups_sent": sent_total,
        "groups_pulled": trainer.groups,
        "groups_pulled_unique": unique_pulled,
        "groups_pulled_twice": duplicates,
        "groups_lost_in_run_api_queue_at_restarts": lost_in_run_api_queue,
        "groups_left_in_run_api_queue_at_end": queued_at_end,
        "groups_lost": lost,
        "finished_groups_not_sent_at_stop": unsent_total,
        "rollouts_pulled": trainer.rollouts,
        "batches_pulled": trainer.batches,
        "trainer_registrations": trainer.registrations,
        "bad_groups": len(trainer.problems),
        "problems": trainer.problems[:50],
        "faults_injected": dict(sorted(injected.items())),
        "policy_requests_injected": {n: dict(sorted(p.injected.items())) for n, p in policies.items()},
        "unexplained_drops": unexplained,
        "serves": per_serve,
        "leftovers": left,
        "events": events,
    }
    (out / "samples.json").write_text(json.dumps({s.backend: s.samples for s in serves}))
    (out / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    if any(s.samples for s in serves):
        plot(serves, out / "soak.png")
    if not any(left.values()):
        subprocess.run(["rm", "-rf", str(work)], check=False)
    return report


def failures(report: dict[str, Any]) -> list[str]:
    """What makes the soak fail, one line each (empty: it passed)."""
    found = [f"{report['bad_groups']} bad pulled groups"] if report["bad_groups"] else []
    if report["groups_pulled_twice"]:
        found.append(f"{report['groups_pulled_twice']} groups pulled twice")
    if report["groups_lost"]:
        found.append(f"{report['groups_lost']} groups sent but neither pulled nor accounted for")
    if report["groups_pulled"] == 0:
        found.append("no group pulled")
    found += report["unexplained_drops"]
    for backend, serve in report["serves"].items():
        if not serve["ran_to_the_end"]:
            found.append(f"serve on {backend} ended before the soak did (exit {serve['exit_status']})")
        elif serve["exit_status"] != 143:
            found.append(f"serve on {backend} exited {serve['exit_status']} on SIGTERM, not 143")
        if serve["groups_dropped_while_stopping"]:
            found.append(f"serve on {backend} dropped {serve['groups_dropped_while_stopping']} groups while stopping")
        for key, value in (serve["growth_last_three_quarters"] or {}).items():
            if (
                key in GROWTH_JUDGED
                and value is not None
                and report["minutes"] >= GROWTH_JUDGED_FROM_MINUTES
                and value > report["growth_limit"]
            ):
                found.append(f"serve on {backend}: {key} grew {value:.1%} over the last three quarters "
                             f"(limit {report['growth_limit']:.0%})")  # fmt: skip
    found += [f"left behind: {k}: {v}" for k, v in report["leftovers"].items() if v]
    return found


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--minutes", type=float, default=60)
    p.add_argument("--backends", default=",".join(BACKENDS), help="comma-separated: sandbox, bwrap, docker")
    p.add_argument("--fault-rate", type=float, default=0.02, help="policy faults per model request")
    p.add_argument("--hostile-rate", type=float, default=0.02, help="hostile first turns per rollout")
    p.add_argument("--tool-call-rate", type=float, default=0.05, help="first turns calling the tool server")
    p.add_argument("--worker-kill-every-s", type=float, default=180, help="mean seconds between SIGKILLed workers")
    p.add_argument("--container-kill-every-s", type=float, default=180, help="mean seconds between killed containers")
    p.add_argument("--policy-restart-every-s", type=float, default=240, help="mean seconds between restarts (0: none)")
    p.add_argument("--policy-down-s", type=float, default=3.0, help="how long the policy servers stay down")
    p.add_argument("--tool-server-restart-every-s", type=float, default=180, help="(0: none)")
    p.add_argument("--tool-server-down-s", type=float, default=3.0)
    p.add_argument("--run-api-restart-every-s", type=float, default=300, help="(0: none)")
    p.add_argument("--run-api-down-s", type=float, default=5.0)
    p.add_argument("--group-size", type=int, default=4)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--concurrency", type=int, default=4, help="groups in flight per serve (max_num_workers)")
    p.add_argument("--sample-s", type=float, default=5.0)
    p.add_argument("--growth-limit", type=float, default=0.10,
                   help=f"most growth of RSS and open files over the last three quarters (runs of "
                        f"{GROWTH_JUDGED_FROM_MINUTES}+ minutes)")  # fmt: skip
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="soak-out")
    report = soak(p.parse_args())
    print(json.dumps(report, indent=2))
    problems = failures(report)
    for line in problems:
        print(f"FAIL: {line}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
