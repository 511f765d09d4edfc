"""Rebuild ``../tasks.jsonl`` from the repositories in this directory.

Each ``<name>/`` holds ``repo/`` (what the model sees, copied to the workspace root),
``hidden_tests/`` (copied in only for scoring), ``ISSUE.md`` (the bug report) and ``fix.patch``
(the reference fix, a ``patch -p1`` unified diff). Scoring: delete any ``hidden_tests`` the model
left in the workspace, upload ``hidden_tests/`` there, run ``test_command`` (exit 0 = pass). The index carries everything an environment
needs per task, including two reference solutions for scripted policies: ``solution`` (one
shell command applying the patch) and ``solution_tool_calls`` (equivalent ``patch`` tool calls).

    python3 python/hermes_env/environments/swe_lite/repos/build_index.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
INDEX = HERE.parent / "tasks.jsonl"
# -I: the workspace is not on sys.path until unittest adds it for discovery, after the standard library's
# unittest is imported, so a model-written unittest.py in the workspace cannot stand in for the real one.
TEST_COMMAND = "python3 -I -m unittest discover -s hidden_tests -t . -p 'test_*.py'"
INSTRUCTIONS = (
    "The repository is in your current directory. Fix the bug described in the issue below by editing the "
    "source code. Hidden tests will check the behaviour described in the issue; do not add new files.\n\n"
)


def hunks_to_tool_calls(patch_text: str) -> list[dict]:
    """``patch`` tool calls (hermes-agent's replace mode: exact old_string -> new_string) equivalent to a
    unified diff's hunks."""
    calls: list[dict] = []
    path = None
    old: list[str] = []
    new: list[str] = []

    def flush() -> None:
        if path is not None and (old or new):
            calls.append(
                {"name": "patch", "arguments": {"path": path, "old_string": "".join(old), "new_string": "".join(new)}}
            )

    for line in patch_text.splitlines(keepends=True):
        if line.startswith("+++ "):
            flush()
            old, new = [], []
            path = line[4:].strip().removeprefix("b/")
        elif line.startswith("--- "):
            continue
        elif line.startswith("@@"):
            flush()
            old, new = [], []
        elif line.startswith(" "):
            old.append(line[1:])
            new.append(line[1:])
        elif line.startswith("-"):
            old.append(line[1:])
        elif line.startswith("+"):
            new.append(line[1:])
    flush()
    return calls


def build_rows(root: Path = HERE) -> list[dict]:
    rows = []
    for repo_dir in sorted(p for p in root.iterdir() if p.is_dir() and (p / "repo").is_dir()):
        name = repo_dir.name
        issue = (repo_dir / "ISSUE.md").read_text(encoding="utf-8").strip()
        patch_text = (repo_dir / "fix.patch").read_text(encoding="utf-8")
        files = sorted(
            p.relative_to(repo_dir / "repo").as_posix() for p in (repo_dir / "repo").rglob("*") if p.is_file()
        )
        calls = hunks_to_tool_calls(patch_text)
        for call in calls:
            source = (repo_dir / "repo" / call["arguments"]["path"]).read_text(encoding="utf-8")
            if source.count(call["arguments"]["old_string"]) != 1:
                raise ValueError(
                    f"{name}: a hunk of fix.patch does not match exactly once in {call['arguments']['path']}"
                )
        rows.append(
            {
                "id": name,
                "prompt": INSTRUCTIONS + issue,
                "issue": issue,
                "repo": f"repos/{name}/repo",
                "hidden_tests": f"repos/{name}/hidden_tests",
                "files": files,
                "test_command": TEST_COMMAND,
                "solution": f"patch -p1 <<'PATCH'\n{patch_text}PATCH",
                "solution_tool_calls": calls,
            }
        )
    return rows


def render(rows: list[dict]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


if __name__ == "__main__":
    rows = build_rows()
    INDEX.write_text(render(rows), encoding="utf-8")
    print(f"wrote {len(rows)} tasks to {INDEX}", file=sys.stderr)
