"""Environment files written as hermes-agent's are (tests/hermes_agent/upstream_style/environments/...), ported with
``python -m hermes_env.port`` and run as a user would: ``process`` in Phase 1 and Phase 2 (two groups) and
``evaluate``, against the replay policy of the scripted servers, on bwrap, and the TerminalBench2-style one on
docker too. Each file uses the upstream API the way hermes-agent's files do: defaults naming a remote backend
and a Hub tokenizer, toolsets with ``web`` in them, ``max_token_length``, a local dataset folder read with
``datasets.load_dataset``, ``register_task_env_overrides``, ``HermesAgentLoop(server=..., task_id=...)``,
``ToolContext(task_id)`` from a worker thread, ``upload_dir("/tests")``, ``download_dir("/logs/verifier")``,
``cleanup_vm``, ``cleanup_all_environments`` and ``_tool_executor.shutdown``.
"""

from __future__ import annotations

import base64
import io
import json
import os
import socket
import subprocess
import sys
import tarfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hermes_env.isolation import bwrap_problem

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(bwrap_problem() is not None, reason=f"bubblewrap unusable: {bwrap_problem()}"),
]
pytest.importorskip("hermes_env.port", reason="python -m hermes_env.port is not in this tree")
pytest.importorskip("hermes_env.testing.replay", reason="the replay policy is not in this tree")

HERE = Path(__file__).parent
UPSTREAM_STYLE = HERE / "upstream_style"
QWEN3 = ["--openai.tokenizer_name", "bundled:qwen3", "--env.tokenizer_name", "bundled:qwen3"]


def _shell(command: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "terminal", "arguments": {"command": command}}]}


DONE = {"content": "Done."}
# What the scripted model answers, by prompt. The product task is answered wrongly: its reward must be 0.0.
REPLAY = {
    "rules": [
        {"match": "word ready", "turns": [_shell("echo ready > ~/status.txt"), DONE]},
        {"match": "product of 12 and 12", "turns": [
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "~/product.txt", "content": "143\n"}}]},
            DONE]},
        {"match": "capital of France", "turns": [{"content": "Paris."}]},
        {"match": "defining sq", "turns": [_shell("printf 'def sq(x): return x * x\\n' > /workspace/sq.py"), DONE]},
        {"match": "/app/hello\\.txt", "turns": [_shell("mkdir -p /app && echo hello > /app/hello.txt"), DONE]},
        {"match": "integers 1 to 10", "turns": [_shell("mkdir -p /app && echo 55 > /app/sum.txt"), DONE]},
        {"match": "Repair the project", "turns": [_shell("mkdir -p proj && echo fixed > proj/state.txt"), DONE]},
    ]
}  # fmt: skip


def _tar_b64(files: dict[str, str]) -> str:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return base64.b64encode(buf.getvalue()).decode()


def _bench_rows(*, needs_image: bool) -> list[dict[str, Any]]:
    """Two tasks in TerminalBench2's schema: one built from a Dockerfile, one naming an image."""
    dockerfile = "ARG HERMES_BASE_IMAGE\nFROM ${HERMES_BASE_IMAGE}\nWORKDIR /app\nRUN echo baked > /app/seed.txt\n"
    # With needs_image, the check also needs the file the Dockerfile baked in: it passes only in that image.
    seed = " && grep -qx baked /app/seed.txt" if needs_image else ""
    verdict = "then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n"
    return [
        {
            "task_name": "hello-file", "category": "files", "instruction": "Create /app/hello.txt containing: hello",
            "docker_image": "", "environment_tar": _tar_b64({"Dockerfile": dockerfile}),
            "tests_tar": _tar_b64({"expected.txt": "hello\n"}),
            "test_sh": f"if diff -q /app/hello.txt /tests/expected.txt{seed}; {verdict}",
        },
        {
            "task_name": "sum-numbers", "category": "scripting",
            "instruction": "Write the sum of the integers 1 to 10 into /app/sum.txt",
            "docker_image": "hermes_env/base:bookworm", "environment_tar": "",
            "tests_tar": _tar_b64({"helpers/expected.py": "print(sum(range(1, 11)))\n"}),
            "test_sh": f'if [ "$(cat /app/sum.txt)" = "$(python3 /tests/helpers/expected.py)" ]; {verdict}',
        },
    ]  # fmt: skip


def _parquet(folder: Path, split: str, rows: list[dict[str, Any]]) -> Path:
    import pandas as pd

    (folder / "data").mkdir(parents=True)
    pd.DataFrame(rows).to_parquet(folder / "data" / f"{split}-00000-of-00001.parquet")
    return folder


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The upstream-style files ported into <work>/environments/..., and the local datasets."""
    root = tmp_path_factory.mktemp("upstream_style")
    for source in sorted(UPSTREAM_STYLE.rglob("*.py")):
        target = root / source.relative_to(UPSTREAM_STYLE)
        target.parent.mkdir(parents=True, exist_ok=True)
        ported = subprocess.run(
            [sys.executable, "-m", "hermes_env.port", str(source), "-o", str(target)],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert ported.returncode == 0, ported.stdout + ported.stderr
        assert "from environments" not in target.read_text(), target
    test = "import sys; sys.path.insert(0, '/workspace'); from sq import sq; assert sq(7) == 49"
    code = [{"prompt": "Create /workspace/sq.py defining sq(x) returning x * x.", "test": test}]
    _parquet(root / "data" / "code", "test", code)
    _parquet(root / "data" / "bench", "train", _bench_rows(needs_image=False))
    _parquet(root / "data" / "bench_image", "train", _bench_rows(needs_image=True))
    (root / "replay.json").write_text(json.dumps(REPLAY))
    return root


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def servers(work: Path) -> Iterator[dict[str, str]]:
    """The scripted OpenAI server (Phase 1) and the scripted vLLM server (Phase 2), both on the replay file."""
    started: list[subprocess.Popen[bytes]] = []
    urls = {}
    try:
        for kind, phase in (("scripted_openai", "openai"), ("scripted_vllm", "vllm")):
            port = _free_port()
            started.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        f"hermes_env.testing.{kind}",
                        "--port",
                        str(port),
                        "--policy",
                        f"replay:{work / 'replay.json'}",
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
            urls[phase] = f"http://127.0.0.1:{port}/v1"
        # What each answers once it is up: the OpenAI stand-in lists its model, the vLLM one has vLLM's /health.
        probes = [f"{urls['openai']}/models", urls["vllm"].removesuffix("/v1") + "/health"]
        for url in probes:
            deadline = time.monotonic() + 60
            while True:
                try:
                    urllib.request.urlopen(url, timeout=2).close()
                    break
                except OSError:
                    assert time.monotonic() < deadline, f"scripted server {url} did not start"
                    time.sleep(0.2)
        yield urls
    finally:
        for proc in started:
            proc.terminate()
            proc.wait(timeout=30)


def run_env(work: Path, env_file: str, command: str, phase: str, url: str, *args: str) -> str:
    """``python <ported env file> <command> ...`` as a user types it; its stdout (it must exit 0)."""
    server = ["--openai.base_url", url, "--openai.server_type", phase, *QWEN3]
    proc = subprocess.run(
        [sys.executable, str(work / "environments" / env_file), command, *server, *args],
        capture_output=True, text=True, timeout=300, cwd=work,
        env={**os.environ, "WANDB_MODE": "disabled", "FILE_TASKS_API_KEY": ""},
    )  # fmt: skip
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    return proc.stdout + proc.stderr


def _scores(path: Path) -> list[tuple[str, list[float]]]:
    """Each written group's task prompt (first line) and scores, sorted (groups finish in any order)."""
    scores = []
    for line in path.read_text().splitlines():
        group = json.loads(line)
        prompt = next(m["content"] for m in group["messages"][0] if m["role"] == "user")
        scores.append((prompt.split("\n")[0], group["scores"]))
    return sorted(scores)


@pytest.mark.parametrize("phase", ["openai", "vllm"])
def test_terminal_test_style_env(work: Path, servers: dict[str, str], phase: str) -> None:
    out = work / f"file_tasks_{phase}.jsonl"
    log = run_env(
        work, "file_tasks_env/file_tasks_env.py", "process", phase, servers[phase],
        "--env.terminal_backend", "bwrap", "--env.total_steps", "2", "--env.data_path_to_save_groups", str(out),
    )  # fmt: skip
    assert "web_search" in log and "cannot run here" in log  # the web toolset was left out with a warning
    assert _scores(out) == [  # the right answer scores 1.0, the wrong one 0.0
        ("Write the product of 12 and 12 into ~/product.txt", [0.0, 0.0]),
        ("Write the word ready into ~/status.txt", [1.0, 1.0]),
    ]
    group = json.loads(out.read_text().splitlines()[0])
    assert "web_search" not in json.dumps(group["messages"][0][:1])  # tools offered: terminal and file only
    evals = work / f"file_tasks_eval_{phase}"
    run_env(
        work, "file_tasks_env/file_tasks_env.py", "evaluate", phase, servers[phase],
        "--env.terminal_backend", "bwrap", "--env.data_dir_to_save_evals", str(evals),
    )  # fmt: skip
    metrics = json.loads((evals / "metrics.json").read_text())
    assert metrics["results"]["all"]["eval/accuracy"] == 1.0


@pytest.mark.parametrize("phase", ["openai", "vllm"])
def test_swe_style_env_with_a_local_dataset_folder(work: Path, servers: dict[str, str], phase: str) -> None:
    out = work / f"code_tasks_{phase}.jsonl"
    log = run_env(
        work, "code_tasks_env/code_tasks_env.py", "process", phase, servers[phase],
        "--env.terminal_backend", "bwrap", "--env.dataset_name", str(work / "data" / "code"),
        "--env.total_steps", "2", "--env.data_path_to_save_groups", str(out),
    )  # fmt: skip
    assert "the distribution wins" in log
    assert [scores for _, scores in _scores(out)] == [[1.0, 1.0], [1.0, 1.0]]


def test_remote_backend_is_refused_naming_the_local_ones(work: Path, servers: dict[str, str]) -> None:
    proc = subprocess.run(
        [sys.executable, str(work / "environments/code_tasks_env/code_tasks_env.py"), "process",
         "--openai.base_url", servers["openai"], "--openai.server_type", "openai", *QWEN3,
         "--env.dataset_name", str(work / "data" / "code")],
        capture_output=True, text=True, timeout=120, cwd=work,
    )  # fmt: skip
    assert proc.returncode != 0
    assert "'daytona'" in proc.stderr and "--env.terminal_backend docker" in proc.stderr, proc.stderr[-2000:]


def _bench(work: Path, servers: dict[str, str], phase: str, backend: str, data: str) -> list[dict[str, Any]]:
    results = work / f"bench_{backend}_{phase}.jsonl"
    run_env(
        work, "benchmarks/bench_tasks/bench_tasks_env.py", "evaluate", phase, servers[phase],
        "--env.terminal_backend", backend, "--env.dataset_name", str(work / "data" / data),
        "--env.results_file", str(results),
    )  # fmt: skip
    return sorted((json.loads(line) for line in results.read_text().splitlines()), key=lambda r: r["task_name"])


def test_tb2_style_env_on_bwrap(work: Path, servers: dict[str, str]) -> None:
    # Phase 2: the environment passes its own server to HermesAgentLoop; tests at /tests, reward from /logs/verifier.
    results = _bench(work, servers, "vllm", "bwrap", "bench")
    assert [(r["task_name"], r["reward"], r["error"]) for r in results] == [
        ("hello-file", 1.0, None),
        ("sum-numbers", 1.0, None),
    ]
    # process: an evaluation-only environment gives no groups, and says so without failing.
    log = run_env(
        work, "benchmarks/bench_tasks/bench_tasks_env.py", "process", "openai", servers["openai"],
        "--env.terminal_backend", "bwrap", "--env.dataset_name", str(work / "data" / "bench"),
        "--env.total_steps", "2",
    )  # fmt: skip
    assert "2 item(s) gave no group" in log


@pytest.mark.containers
def test_tb2_style_env_on_docker_runs_each_task_in_its_image(work: Path, servers: dict[str, str]) -> None:
    # hello-file's check needs the file its Dockerfile (from environment_tar) bakes in: it passes only in that image.
    results = _bench(work, servers, "openai", "docker", "bench_image")
    assert [(r["task_name"], r["reward"], r["error"]) for r in results] == [
        ("hello-file", 1.0, None),
        ("sum-numbers", 1.0, None),
    ]


REPAIR = "Repair the project in ./proj: its state.txt must say fixed."


@pytest.mark.parametrize("phase", ["openai", "vllm"])
def test_sandbox_hook_env_scores_as_its_tool_pool_mode_says(work: Path, servers: dict[str, str], phase: str) -> None:
    # default: compute_reward (0.05 for one tool call, once its `python` check passes on bwrap); the hooks unused.
    default = work / f"repo_fix_default_{phase}.jsonl"
    run_env(
        work, "repo_fix_env/repo_fix_env.py", "process", phase, servers[phase],
        "--env.terminal_backend", "bwrap", "--env.data_path_to_save_groups", str(default),
    )  # fmt: skip
    assert _scores(default) == [(REPAIR, [0.05, 0.05])]
    # Another mode: setup_trajectory_workspace and verify_and_score_trajectory, through exec_tool, in the sandbox.
    hooks = work / f"repo_fix_hooks_{phase}.jsonl"
    run_env(
        work, "repo_fix_env/repo_fix_env.py", "process", phase, servers[phase], "--env.terminal_backend", "bwrap",
        "--env.tool_pool_mode", "nomad", "--env.data_path_to_save_groups", str(hooks),
    )  # fmt: skip
    assert _scores(hooks) == [(REPAIR, [1.0, 1.0])]


def test_evaluate_with_no_system_prompt_in_phase_2(work: Path, servers: dict[str, str]) -> None:
    # The environment sends {"role": "system", "content": None}: rendered as "" (as vLLM does), the loop runs.
    evals = work / "repo_fix_eval"
    run_env(
        work, "repo_fix_env/repo_fix_env.py", "evaluate", "vllm", servers["vllm"],
        "--env.terminal_backend", "bwrap", "--env.data_dir_to_save_evals", str(evals),
    )  # fmt: skip
    assert json.loads((evals / "metrics.json").read_text())["results"]["all"]["eval/avg_reward"] == 0.05
