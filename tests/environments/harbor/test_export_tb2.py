"""export-tb2: rows in the schema upstream's Terminal-Bench 2 environment reads, loadable with datasets."""

from __future__ import annotations

import base64
import io
import tarfile
from pathlib import Path

from hermes_env.environments.harbor.export_tb2 import main

TASKS = Path(__file__).parent / "tasks"


def _untar(b64: str, target: Path) -> None:
    # As upstream unpacks them: base64, then a gzip tar extracted into a directory.
    with tarfile.open(fileobj=io.BytesIO(base64.b64decode(b64)), mode="r:gz") as tar:
        tar.extractall(target, filter="data")


def test_export_loads_and_unpacks_as_upstream_reads_it(tmp_path: Path) -> None:
    import datasets

    assert main([str(TASKS), str(tmp_path / "out"), "count-words", "no-solution"]) == 0
    rows = {r["task_name"]: r for r in datasets.load_dataset(str(tmp_path / "out"), split="train")}
    assert sorted(rows) == ["count-words", "no-solution"]
    row = rows["count-words"]
    assert row["category"] == "file-operations"
    assert row["instruction"].startswith("The file /app/notes.txt")
    assert row["docker_image"] == "example.invalid/count-words:1"
    assert row["test_sh"] == (TASKS / "count-words" / "tests" / "test.sh").read_text()
    _untar(row["environment_tar"], tmp_path / "env")
    assert (tmp_path / "env" / "Dockerfile").read_text() == (TASKS / "count-words/environment/Dockerfile").read_text()
    assert (tmp_path / "env" / "notes.txt").is_file()
    _untar(row["tests_tar"], tmp_path / "tests")
    assert sorted(p.name for p in (tmp_path / "tests").iterdir()) == ["test.sh", "test_outputs.py"]
    assert rows["no-solution"]["solution_tar"] == ""
    _untar(row["solution_tar"], tmp_path / "solution")
    assert (tmp_path / "solution" / "solve.sh").is_file()


def test_export_of_a_missing_folder_fails_clearly(tmp_path: Path, capsys) -> None:
    assert main([str(tmp_path / "nope"), str(tmp_path / "out")]) == 2
    assert "does not exist" in capsys.readouterr().err
