"""The environments' command line as a newcomer meets it: help that lists every command, a quiet start,
one-line errors, and ``bundled:qwen3`` wherever a tokenizer name goes."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from hermes_env.env.run_modes import _asked_for_wandb
from hermes_env.errors import TokenizerUnavailable
from hermes_env.resources import bundled_tokenizer_dir, check_hub_tokenizer, load_tokenizer, resolve_tokenizer_name

REPO = Path(__file__).resolve().parents[2]
ENVS = [
    "hermes_env.environments.terminal_tasks",
    "hermes_env.environments.swe_lite",
    "hermes_env.environments.bench_eval",
]


UNCACHED_HUB_ID = "hermes-env-tests/not-in-any-cache"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens once the socket closes


def _run(*args: str, cwd: Path = REPO, **extra_env: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "WANDB_MODE": "disabled", "PYTHONUNBUFFERED": "1", **extra_env}
    return subprocess.run(
        [sys.executable, "-m", *args], capture_output=True, text=True, timeout=300, env=env, cwd=cwd, check=False
    )


@pytest.mark.parametrize("module", ENVS)
def test_help_lists_every_command_without_markup(module: str) -> None:
    top = _run(module, "--help")
    assert top.returncode == 0, top.stderr
    assert f"usage: python -m {module} {{serve,process,evaluate" in top.stdout
    for command in ("serve", "process", "evaluate", "--verbose", "--config"):
        assert command in top.stdout
    assert ("demo" in top.stdout) == module.endswith("terminal_tasks")
    detail = _run(module, "process", "--help")
    assert detail.returncode == 0 and "--env.tokenizer_name" in detail.stdout
    for text in (top.stdout, detail.stdout):
        assert "`" not in text  # no raw RST/Markdown markup
    assert "PyTorch was not found" not in top.stderr + detail.stderr


def test_an_unloadable_tokenizer_is_a_one_line_error(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-tokenizer"
    proc = _run(
        "hermes_env.environments.terminal_tasks", "process", "--env.tokenizer_name", str(missing),
        "--env.data_path_to_save_groups", str(tmp_path / "out.jsonl"), cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("error: could not load a tokenizer") and "bundled:qwen3" in last, proc.stderr[-2000:]
    assert str(missing) in last and "Traceback" not in proc.stderr


def test_an_unreachable_hub_id_is_refused_at_once(tmp_path: Path) -> None:
    """Offline, a Hub id that is not cached is a one-line error naming the flag, without Hugging Face's retries."""
    hub = f"http://127.0.0.1:{_closed_port()}"
    proc = _run(
        "hermes_env.environments.terminal_tasks", "process", "--env.tokenizer_name", UNCACHED_HUB_ID,
        "--env.data_path_to_save_groups", str(tmp_path / "out.jsonl"), cwd=tmp_path, HF_ENDPOINT=hub,
    )  # fmt: skip
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: --env.tokenizer_name: tokenizer {UNCACHED_HUB_ID!r} is a Hugging Face Hub id"), last
    assert "not in the local cache" in last and hub.removeprefix("http://") in last and "bundled:qwen3" in last
    assert "Retrying" not in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "out.jsonl").exists()


def test_hub_check_probes_only_uncached_hub_ids(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ("HF_HUB_OFFLINE", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    closed = _closed_port()
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed}")
    with pytest.raises(TokenizerUnavailable, match=rf"127\.0\.0\.1:{closed} cannot be reached"):
        check_hub_tokenizer(UNCACHED_HUB_ID)
    with pytest.raises(TokenizerUnavailable, match="not in the local cache"):
        load_tokenizer(UNCACHED_HUB_ID)
    # Local folders (even empty ones), bundled names and paths are never sent to the Hub, so never probed.
    check_hub_tokenizer(str(tmp_path))
    check_hub_tokenizer("bundled:qwen3")
    check_hub_tokenizer(str(bundled_tokenizer_dir("qwen3")))
    # A Hub that answers: Hugging Face decides (it may still find no such repository).
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.getsockname()[1]}")
        check_hub_tokenizer(UNCACHED_HUB_ID)
    # HF_HUB_OFFLINE: Hugging Face fails fast itself, with its own message.
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed}")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    check_hub_tokenizer(UNCACHED_HUB_ID)


def test_scripted_demo_starts_quietly_and_verbose_shows_the_configuration(tmp_path: Path) -> None:
    args = ("hermes_env.environments.terminal_tasks", *"demo --groups 1 --group-size 2 --backend local".split())
    quiet = _run(*args, "--out", str(tmp_path / "q.jsonl"), cwd=tmp_path)
    assert quiet.returncode == 0, quiet.stderr[-2000:]
    assert "TerminalTasksConfig(" not in quiet.stdout + quiet.stderr
    assert "local Base URL" not in quiet.stderr and "PyTorch was not found" not in quiet.stderr
    verbose = _run(*args, "--out", str(tmp_path / "v.jsonl"), "--verbose", cwd=tmp_path)
    assert verbose.returncode == 0, verbose.stderr[-2000:]
    assert "TerminalTasksConfig(" in verbose.stdout + verbose.stderr


def test_bundled_tokenizer_names() -> None:
    folder = bundled_tokenizer_dir("qwen3")
    assert resolve_tokenizer_name("bundled:qwen3") == str(folder) and (folder / "tokenizer.json").is_file()
    assert resolve_tokenizer_name("Qwen/Qwen3-8B") == "Qwen/Qwen3-8B"  # anything else passes through
    with pytest.raises(TokenizerUnavailable, match="bundled tokenizers: bundled:qwen3"):
        resolve_tokenizer_name("bundled:llama")
    assert load_tokenizer("bundled:qwen3").encode("hello") == load_tokenizer(str(folder)).encode("hello")


@pytest.mark.parametrize(
    ("argv", "asked"),
    [
        (["process"], False),
        (["process", "--env.use_wandb", "true"], True),
        (["process", "--env.use_wandb=True"], True),
        (["process", "--env.use_wandb", "false"], False),
    ],
)
def test_only_an_explicit_flag_counts_as_asking_for_wandb(argv: list[str], asked: bool) -> None:
    assert _asked_for_wandb(argv) is asked
