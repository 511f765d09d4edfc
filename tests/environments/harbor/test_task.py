"""Reading Harbor task directories: the model of task.toml, and one clear error per broken task."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hermes_env.environments.harbor.task import load_task, load_tasks
from hermes_env.errors import HarborTaskError

TASKS = Path(__file__).parent / "tasks"


def test_reads_every_shipped_task() -> None:
    tasks = load_tasks(TASKS)
    assert [t.name for t in tasks] == sorted(p.name for p in TASKS.iterdir() if (p / "task.toml").is_file())
    big = next(t for t in tasks if t.name == "big-buffer")
    assert big.config.environment.memory_mb == 3584
    assert big.config.agent.timeout_sec == 300.0
    offline = next(t for t in tasks if t.name == "offline-note")
    assert offline.config.environment.allow_internet is False
    assert next(t for t in tasks if t.name == "no-solution").solution_dir is None
    words = next(t for t in tasks if t.name == "count-words")
    assert words.config.environment.docker_image == "example.invalid/count-words:1"
    assert words.category == "file-operations"
    assert "wc -w" in words.instruction


def test_harbor_defaults_and_legacy_sizes(tmp_path: Path) -> None:
    task = _copy("no-solution", tmp_path)
    (task / "task.toml").write_text('[environment]\nmemory = "3G"\nstorage = "512M"\ngpus = 1\nfancy = true\n')
    loaded = load_task(task)
    env = loaded.config.environment
    assert (env.memory_mb, env.storage_mb, env.cpus, env.allow_internet) == (3072, 512, 1.0, True)
    assert loaded.config.verifier.timeout_sec == 600.0
    notes = loaded.config.unhonoured()
    assert any("gpus" in n for n in notes) and any("fancy" in n for n in notes)


@pytest.mark.parametrize(
    ("breakage", "message"),
    [
        (lambda t: (t / "tests" / "test.sh").unlink(), "lacks tests/test.sh"),
        (lambda t: (t / "environment" / "Dockerfile").unlink(), "lacks environment/Dockerfile"),
        (lambda t: (t / "task.toml").write_text("[environment\ncpus = 1\n"), "is not valid TOML"),
        (lambda t: (t / "task.toml").write_text("[environment]\ncpus = 'many'\n"), "environment.cpus"),
        (lambda t: (t / "task.toml").write_text("[environment]\nmemory_mb = -5\n"), "environment.memory_mb"),
        (lambda t: (t / "task.toml").write_text("[verifier]\ntimeout_sec = 0\n"), "verifier.timeout_sec"),
        (lambda t: (t / "instruction.md").write_text("  \n"), "instruction.md is empty"),
    ],
)
def test_a_broken_task_is_named_with_what_to_fix(tmp_path: Path, breakage, message: str) -> None:
    task = _copy("no-solution", tmp_path)
    breakage(task)
    with pytest.raises(HarborTaskError, match=message.replace(".", r"\.")):
        load_task(task)


def test_unknown_task_names_and_empty_folders(tmp_path: Path) -> None:
    with pytest.raises(HarborTaskError, match="no task named nope"):
        load_tasks(TASKS, ["nope"])
    with pytest.raises(HarborTaskError, match="holds no Harbor task"):
        load_tasks(tmp_path)
    with pytest.raises(HarborTaskError, match="does not exist"):
        load_tasks(tmp_path / "missing")


def _copy(name: str, tmp_path: Path) -> Path:
    return Path(shutil.copytree(TASKS / name, tmp_path / name))
