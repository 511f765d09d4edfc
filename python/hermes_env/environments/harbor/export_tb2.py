"""``python -m hermes_env.environments.harbor export-tb2 TASKS_DIR OUT``: Harbor tasks as the rows upstream's
Terminal-Bench 2 environment (hermes-agent's ``terminalbench2_env.py``) loads from its Hub dataset, so that it
evaluates local tasks.

``OUT/data/train-00000-of-00001.parquet`` holds one row per task, and ``datasets.load_dataset(OUT, split="train")``
reads it. The columns upstream reads: ``task_name``, ``category``, ``instruction``, ``docker_image`` (task.toml's,
as upstream's dataset has it: an image this machine cannot pull, so run with ``--env.force_build true``),
``environment_tar`` (the ``environment/`` directory, a base64 tar.gz with the Dockerfile at its root),
``tests_tar`` (``tests/`` likewise) and ``test_sh``. Also kept: ``difficulty``, ``tags``, ``agent_timeout_sec``,
``verifier_timeout_sec``, ``cpus``, ``memory_mb``, ``allow_internet`` and ``solution_tar`` (empty without a
solution).
"""

from __future__ import annotations

import argparse
import base64
import gzip
import io
import os
import sys
import tarfile
from pathlib import Path
from typing import Any

from hermes_env.environments.harbor.task import HarborTask, load_tasks
from hermes_env.errors import HarborTaskError

SHARD = "data/train-00000-of-00001.parquet"


def tar_b64(directory: Path | None) -> str:
    """``directory``'s contents as a base64 tar.gz (paths relative to it; modes kept, owners and times not)."""
    if directory is None or not directory.is_dir():
        return ""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for path in sorted(directory.rglob("*")):
            info = tar.gettarinfo(str(path), arcname=path.relative_to(directory).as_posix())
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            info.mtime = 0  # the same task gives the same bytes
            if info.isfile():
                with path.open("rb") as f:
                    tar.addfile(info, f)
            else:
                tar.addfile(info)
    # gzip's header carries a time unless told otherwise: mtime 0 keeps the bytes a function of the files alone.
    return base64.b64encode(gzip.compress(buf.getvalue(), compresslevel=9, mtime=0)).decode()


def task_row(task: HarborTask) -> dict[str, Any]:
    meta = task.config.metadata
    env = task.config.environment
    tags = meta.get("tags") or []
    return {
        "task_name": task.name,
        "category": task.category,
        "difficulty": str(meta.get("difficulty") or ""),
        "tags": [str(t) for t in tags] if isinstance(tags, list) else [str(tags)],
        "instruction": task.instruction,
        "docker_image": env.docker_image or "",
        "environment_tar": tar_b64(task.environment_dir),
        "tests_tar": tar_b64(task.tests_dir),
        "test_sh": task.test_sh,
        "solution_tar": tar_b64(task.solution_dir),
        "agent_timeout_sec": float(task.config.agent.timeout_sec),
        "verifier_timeout_sec": float(task.config.verifier.timeout_sec),
        "cpus": float(env.cpus),
        "memory_mb": int(env.memory_mb),
        "allow_internet": bool(env.allow_internet),
    }


def export(tasks_dir: str | os.PathLike[str], out: str | os.PathLike[str], names: list[str] | None = None) -> Path:
    """Write the tasks' rows to ``out``; the parquet file's path."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [task_row(task) for task in load_tasks(tasks_dir, names)]
    target = Path(out) / SHARD
    target.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), target)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hermes_env.environments.harbor export-tb2", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("tasks_dir", help="a folder of Harbor tasks")
    parser.add_argument("out", help="the dataset directory to write")
    parser.add_argument("tasks", nargs="*", help="task names (default: all)")
    args = parser.parse_args(argv)
    try:
        path = export(args.tasks_dir, args.out, args.tasks or None)
    except (HarborTaskError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {path} (datasets.load_dataset({str(args.out)!r}, split='train') reads it)")
    return 0
