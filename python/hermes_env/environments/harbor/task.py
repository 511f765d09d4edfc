"""A Harbor task directory, read and checked.

The format (Harbor's; Terminal-Bench 2 uses it)::

    <task>/instruction.md          the prompt
    <task>/task.toml               [metadata], [environment], [agent], [verifier], [solution]
    <task>/environment/Dockerfile  the image, with environment/ as its build context
    <task>/tests/test.sh           the verifier: copied with tests/ to /tests, writes /logs/verifier/reward.txt
    <task>/solution/solve.sh       the reference solution (optional)

A task that breaks this raises :class:`HarborTaskError` with one sentence naming the file and what to fix.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from hermes_env.errors import HarborTaskError

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?\s*$", re.I)
_UNIT_MB = {"": 1 / (1024 * 1024), "K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}


def _size_mb(value: Any) -> int:
    """``"2G"`` / ``"512M"`` (Harbor's older ``memory`` / ``storage`` strings) in MiB."""
    match = _SIZE.match(str(value))
    if match is None:
        raise ValueError(f"{value!r} is not a size such as 2G or 512M")
    return max(1, int(float(match.group(1)) * _UNIT_MB[match.group(2).upper()]))


class EnvironmentSection(BaseModel):
    model_config = ConfigDict(extra="allow")

    docker_image: str | None = Field(default=None, description="Upstream's prebuilt image (not pulled here).")
    build_timeout_sec: float = Field(default=600.0, gt=0)
    cpus: float = Field(default=1.0, gt=0)
    memory_mb: int = Field(default=2048, gt=0)
    storage_mb: int = Field(default=10240, gt=0)
    gpus: int = Field(default=0, ge=0)
    allow_internet: bool = True
    env: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _legacy_sizes(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = dict(data)
            for old, new in (("memory", "memory_mb"), ("storage", "storage_mb")):
                if old in data and new not in data:
                    data[new] = _size_mb(data.pop(old))
        return data

    @field_validator("env", mode="before")
    @classmethod
    def _env_strings(cls, value: Any) -> Any:
        return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else value


class TimeoutSection(BaseModel):
    model_config = ConfigDict(extra="allow")

    timeout_sec: float = Field(default=600.0, gt=0)
    env: dict[str, str] = Field(default_factory=dict)


class TaskConfig(BaseModel):
    """``task.toml``."""

    model_config = ConfigDict(extra="allow")

    version: str = "1.0"
    metadata: dict[str, Any] = Field(default_factory=dict)
    environment: EnvironmentSection = Field(default_factory=EnvironmentSection)
    agent: TimeoutSection = Field(default_factory=TimeoutSection)
    verifier: TimeoutSection = Field(default_factory=TimeoutSection)
    solution: dict[str, Any] = Field(default_factory=dict)

    def unhonoured(self) -> list[str]:
        """Settings of this task.toml that hermes_env does not apply, each said in a few words."""
        env = self.environment
        notes = []
        if env.gpus:
            notes.append(f"gpus = {env.gpus} (containers get no GPU)")
        extra = dict(env.model_extra or {})
        if extra.get("mcp_servers"):
            notes.append("mcp_servers (no MCP servers are started)")
        unknown = sorted(k for k in extra if k != "mcp_servers")
        if unknown:
            notes.append(f"[environment] keys {unknown} (unknown here)")
        return notes


class HarborTask(BaseModel):
    """One task directory, read."""

    name: str
    path: Path
    instruction: str
    config: TaskConfig
    test_sh: str

    @property
    def environment_dir(self) -> Path:
        return self.path / "environment"

    @property
    def tests_dir(self) -> Path:
        return self.path / "tests"

    @property
    def solution_dir(self) -> Path | None:
        solution = self.path / "solution"
        return solution if (solution / "solve.sh").is_file() else None

    @property
    def category(self) -> str:
        return str(self.config.metadata.get("category") or "unknown")


def load_task(path: str | os.PathLike[str]) -> HarborTask:
    """Read the Harbor task at ``path``; HarborTaskError names what is missing or wrong."""
    root = Path(path)
    if not root.is_dir():
        raise HarborTaskError(f"Harbor task {root} is not a directory")
    required = ("instruction.md", "task.toml", "environment/Dockerfile", "tests/test.sh")
    missing = [rel for rel in required if not (root / rel).is_file()]
    if missing:
        raise HarborTaskError(
            f"Harbor task {root.name} lacks {', '.join(missing)}; a task needs instruction.md, task.toml, "
            "environment/Dockerfile and tests/test.sh"
        )
    try:
        raw = tomllib.loads((root / "task.toml").read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise HarborTaskError(f"{root / 'task.toml'} is not valid TOML ({exc}); fix its syntax") from None
    try:
        config = TaskConfig.model_validate(raw)
    except (ValidationError, ValueError) as exc:
        first = exc.errors()[0] if isinstance(exc, ValidationError) else {"loc": (), "msg": str(exc)}
        where = ".".join(str(p) for p in first["loc"]) or "task.toml"
        raise HarborTaskError(f"{root / 'task.toml'}: {where}: {first['msg']}; fix that value") from None
    instruction = (root / "instruction.md").read_text(errors="replace").strip()
    if not instruction:
        raise HarborTaskError(f"{root / 'instruction.md'} is empty; it is the task's prompt")
    return HarborTask(
        name=root.name,
        path=root.resolve(),
        instruction=instruction,
        config=config,
        test_sh=(root / "tests/test.sh").read_text(errors="replace"),
    )


def load_tasks(tasks_dir: str | os.PathLike[str], names: list[str] | None = None) -> list[HarborTask]:
    """The tasks in ``tasks_dir`` (each subdirectory with a task.toml), sorted by name; ``names`` picks some."""
    root = Path(tasks_dir)
    if not root.is_dir():
        raise HarborTaskError(f"tasks directory {root} does not exist")
    found = {p.parent.name: p.parent for p in root.glob("*/task.toml")}
    if (root / "task.toml").is_file():
        found[root.name] = root  # a single task directory
    if names:
        unknown = sorted(set(names) - set(found))
        if unknown:
            raise HarborTaskError(f"no task named {', '.join(unknown)} in {root} (it has {len(found)} tasks)")
        found = {n: found[n] for n in names}
    if not found:
        raise HarborTaskError(f"{root} holds no Harbor task (no <task>/task.toml)")
    return [load_task(found[name]) for name in sorted(found)]
