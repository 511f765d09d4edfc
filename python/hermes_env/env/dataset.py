"""Loading task rows from a local .jsonl/.json/.parquet/.csv file, a local folder of data files, or a Hugging Face
dataset.

Every error names the file (and line) and says what to fix; nothing is silently skipped.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hermes_env.env.config import is_local_dataset
from hermes_env.errors import DatasetError

__all__ = ["load_rows"]


def load_rows(name: str, split: str = "train", prompt_field: str = "prompt") -> list[dict[str, Any]]:
    """All rows of the dataset ``name``; each row is checked to carry ``prompt_field``."""
    rows = _load_local(Path(name).expanduser(), split) if is_local_dataset(name) else _load_hub(name, split)
    if not rows:
        raise DatasetError(
            f"dataset {name!r} (split {split!r}) has no rows; add rows or pass another "
            "--env.dataset_name/--env.dataset_split"
        )
    for index, row in enumerate(rows):
        if not isinstance(row, dict):
            raise DatasetError(
                f"dataset {name!r}: row {index} is a {type(row).__name__}, expected a JSON object; "
                "make every row an object"
            )
        if prompt_field not in row:
            raise DatasetError(
                f"dataset {name!r}: row {index} has no field {prompt_field!r} (fields: {sorted(row)}); "
                "set --env.prompt_field to the field that holds the prompt"
            )
    return rows


def _load_local(path: Path, split: str) -> list[dict[str, Any]]:
    if path.is_dir() or path.suffix in (".parquet", ".csv"):
        # A folder in a Hub dataset's layout (data/train-*.parquet, test.jsonl, ...) or a single parquet/csv
        # file: read as `datasets.load_dataset` reads it, so a local copy stands in for the Hub name.
        return _load_with_datasets(path, split)
    if not path.is_file():
        raise DatasetError(
            f"dataset file {str(path)!r} not found; pass --env.dataset_name with an existing .jsonl/.json/.parquet "
            "file or a folder of data files"
        )
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise DatasetError(
                f"{path}: not valid JSON ({err}); fix the file, or use .jsonl with one object per line"
            ) from None
        if isinstance(data, dict):
            # {"train": [...], "test": [...]}: pick the split.
            if split not in data:
                raise DatasetError(f"{path}: no split {split!r} (splits: {sorted(data)}); set --env.dataset_split")
            data = data[split]
        if not isinstance(data, list):
            raise DatasetError(
                f"{path}: holds a {type(data).__name__}; write a list of row objects or an object of splits "
                '({"train": [...], "test": [...]})'
            )
        return data
    rows = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as err:
            raise DatasetError(
                f"{path}:{lineno}: not valid JSON ({err.msg} at column {err.colno}); "
                "fix that line (one JSON object per line)"
            ) from None
    return rows


def _load_with_datasets(path: Path, split: str) -> list[dict[str, Any]]:
    try:
        import datasets
    except ImportError:
        raise DatasetError(f"{str(path)!r} is read with the `datasets` package; pip install datasets") from None
    try:
        if path.is_dir():
            ds = datasets.load_dataset(str(path), split=split)
        else:
            ds = datasets.load_dataset(path.suffix.lstrip("."), data_files={split: str(path)}, split=split)
    except Exception as err:  # noqa: BLE001 - datasets raises many kinds; all mean "cannot load"
        raise DatasetError(
            f"could not read local dataset {str(path)!r} split {split!r} with datasets.load_dataset: {err}; "
            "name its files by split (train.jsonl, data/test-00000-of-00001.parquet) or set --env.dataset_split"
        ) from err
    return [dict(row) for row in ds]


def _load_hub(name: str, split: str) -> list[dict[str, Any]]:
    try:
        import datasets
    except ImportError:
        raise DatasetError(
            f"{name!r} is not a local file and the `datasets` package is not installed; "
            "pip install datasets, or point --env.dataset_name at a .jsonl file"
        ) from None
    try:
        ds = datasets.load_dataset(name, split=split)
    except Exception as err:  # noqa: BLE001 - datasets raises many kinds; all mean "cannot load"
        raise DatasetError(f"could not load Hugging Face dataset {name!r} split {split!r}: {err}") from err
    return [dict(row) for row in ds]
