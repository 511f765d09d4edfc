"""The tools hermes-agent's in-process tool server (``tool_server_url: inprocess``) provides here offline.

Upstream's server serves hermes-agent's external tools whose requirements are met; without network
or keys that leaves the skills readers: ``skills_list`` and ``skill_view`` read the skills folder
(``$HERMES_HOME/skills``, default ``~/.hermes/skills``; one folder per skill holding ``SKILL.md``
with ``name``/``description`` front matter, a category being the folder above) and answer
hermes-agent's JSON. ``TOOLS`` is what ``tool_server_tools`` names by default for an AgentEnv.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import yaml

from hermes_env.slot_pool.tool_server import ExternalTool

MAX_NAME_LENGTH = 64
MAX_DESCRIPTION_LENGTH = 1024
_SKIPPED_PARTS = {".git", ".github", ".hub"}


def skills_dir() -> Path:
    return Path(os.environ.get("HERMES_HOME") or Path.home() / ".hermes") / "skills"


def _front_matter(text: str) -> tuple[dict[str, Any], str]:
    if not text.startswith("---"):
        return {}, text
    head, sep, body = text[3:].partition("\n---")
    if not sep:
        return {}, text
    try:
        value = yaml.safe_load(head)
    except yaml.YAMLError:
        value = None
    return (value if isinstance(value, dict) else {}), body.lstrip("-").lstrip("\n")


def _skills(root: Path) -> list[dict[str, Any]]:
    found = []
    for skill_md in sorted(root.rglob("SKILL.md")):
        if _SKIPPED_PARTS & set(skill_md.parts):
            continue
        meta, body = _front_matter(skill_md.read_text(encoding="utf-8", errors="replace"))
        description = str(meta.get("description") or "")
        if not description:
            description = next((ln.strip() for ln in body.splitlines() if ln.strip() and not ln.startswith("#")), "")
        if len(description) > MAX_DESCRIPTION_LENGTH:
            description = description[: MAX_DESCRIPTION_LENGTH - 3] + "..."
        parts = skill_md.relative_to(root).parts
        found.append(
            {
                "name": str(meta.get("name") or skill_md.parent.name)[:MAX_NAME_LENGTH],
                "description": description,
                "category": parts[0] if len(parts) >= 3 else None,
            }
        )
    return found


def skills_list(args: dict[str, Any]) -> str:
    """hermes-agent's ``skills_list(category)``: every skill's name, description and category."""
    root = skills_dir()
    skills = _skills(root) if root.is_dir() else []
    if not skills:
        return json.dumps({"success": True, "skills": [], "categories": [], "message": f"No skills found in {root}."})
    category = args.get("category")
    if category:
        skills = [s for s in skills if s["category"] == category]
    skills.sort(key=lambda s: (s["category"] or "", s["name"]))
    return json.dumps(
        {
            "success": True,
            "skills": skills,
            "categories": sorted({s["category"] for s in skills if s["category"]}),
            "count": len(skills),
            "hint": "Use skill_view(name) to see full content, tags, and linked files",
        },
        ensure_ascii=False,
    )


def skill_view(args: dict[str, Any]) -> str:
    """hermes-agent's ``skill_view(name, file_path)``: a skill's SKILL.md (or one of its files)."""
    root, name = skills_dir(), str(args.get("name") or "")
    if not name:
        return json.dumps({"success": False, "error": "skill_view needs the skill's name"})
    candidates = [root / name] + [p.parent for p in root.rglob("SKILL.md") if p.parent.name == name]
    skill = next((c for c in candidates if (c / "SKILL.md").is_file()), None)
    if skill is None or not skill.resolve().is_relative_to(root.resolve()):
        return json.dumps({"success": False, "error": f"Skill '{name}' not found."})
    target = (skill / str(args.get("file_path") or "SKILL.md")).resolve()
    if not target.is_relative_to(skill.resolve()) or not target.is_file():
        return json.dumps({"success": False, "error": f"File '{args.get('file_path')}' not found in skill '{name}'."})
    meta, _ = _front_matter((skill / "SKILL.md").read_text(encoding="utf-8", errors="replace"))
    return json.dumps(
        {
            "success": True,
            "name": str(meta.get("name") or skill.name),
            "content": target.read_text(encoding="utf-8", errors="replace"),
            "path": str(target.relative_to(root.resolve())),
        },
        ensure_ascii=False,
    )


TOOLS = [
    ExternalTool(
        "skills_list",
        skills_list,
        "List available skills (name and description). Use skill_view(name) to load a skill's full content.",
        {
            "type": "object",
            "properties": {"category": {"type": "string", "description": "Only the skills of this category."}},
        },
    ),
    ExternalTool(
        "skill_view",
        skill_view,
        "Load a skill's full content (SKILL.md) or one of its linked files.",
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The skill's name or path (e.g. 'axolotl')."},
                "file_path": {"type": "string", "description": "A file inside the skill (e.g. 'references/api.md')."},
            },
            "required": ["name"],
        },
    ),
]
