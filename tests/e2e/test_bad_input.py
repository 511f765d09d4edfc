"""Bad input on the command line: one clear ``error:`` line, a non-zero exit, no traceback, no output file."""

from __future__ import annotations

from pathlib import Path

import pytest
from e2e_helpers import free_port, run_env

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        pytest.param(
            ["--env.enabled_toolsets", "terminal,bogus"],
            "unknown toolset(s) in enabled_toolsets: 'bogus'; valid toolsets: web, search, vision",
            id="unknown-toolset",
        ),
        pytest.param(
            ["--env.distribution", "nope"],
            "unknown toolset distribution 'nope'; valid distributions:",
            id="unknown-dist",
        ),
        pytest.param(
            ["--env.enabled_toolsets", "terminal", "--env.distribution", "balanced"],
            "set either enabled_toolsets or distribution, not both",
            id="both",
        ),
        pytest.param(
            ["--env.dataset_name", "/nonexistent/tasks.jsonl"],
            "dataset '/nonexistent/tasks.jsonl' not found",
            id="missing-dataset",
        ),
        pytest.param(
            ["--env.terminal_backend", "nope"],
            "terminal backend 'nope' cannot be used: unknown terminal backend 'nope'; valid backends:",
            id="unknown-backend",
        ),
        pytest.param(
            ["--env.terminal_backend", "modal"],
            "terminal backend 'modal' (Modal cloud sandboxes) is hermes-agent's and does not run here; pass "
            "--env.terminal_backend docker",
            id="remote-backend",
        ),
        pytest.param(
            ["--env.server_check_timeout", "0.5"],
            "cannot reach the inference server at http://127.0.0.1:{port}/v1",
            id="unreachable-server",
        ),
    ],
)
def test_bad_input_stops_with_one_clear_message(tmp_path: Path, flags: list[str], message: str) -> None:
    port = free_port()  # nothing listens there
    out = tmp_path / "groups.jsonl"
    proc = run_env(
        "hermes_env.environments.terminal_tasks",
        "process",
        "--openai.base_url", f"http://127.0.0.1:{port}/v1",
        "--env.terminal_backend", "local",
        "--env.data_path_to_save_groups", str(out),
        *flags,
        timeout=120,
    )  # fmt: skip
    assert proc.returncode != 0
    assert message.format(port=port) in proc.stderr, proc.stderr[-2000:]
    assert "error: " in proc.stderr and "Traceback" not in proc.stderr
    assert not out.exists() or out.read_text() == ""
