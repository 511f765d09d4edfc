"""Draw the import graph of python/hermes_env's units, layer by layer, as docs/import_graph.png.

    PYTHONPATH=python .venv/bin/python scripts/draw_import_graph.py [OUT.png]

The units and layers are ``hermes_env._layers``'s (the same the layering test checks). An arrow A -> B: A imports
B. Arrows implied by a longer path (A -> B -> C makes A -> C implied) are left out, so that what is drawn is what
each unit needs directly and the picture stays readable; the count of all unit imports is in the title. Imports of
``_lazy.py`` (the helper that loads names on first use, imported by most packages) are not drawn either, nor the
old paths of renamed packages (``envs``, ``sandbox``, ``models``: shims for one release).
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display needed
import matplotlib.pyplot as plt
from hermes_env import _layers
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

REPO = Path(__file__).resolve().parents[1]
# One colour per part of the stack, so the eye finds the parts: (units, colour, legend).
GROUPS: tuple[tuple[frozenset[str], str, str], ...] = (
    (frozenset({"_core", "_lazy", "_layers", "_renamed", "errors", "message_fields", "sync_bridge", "timeouts",
                "resources", "trajectory", "parsers"}),
     "#dfe8f5", "foundation: Rust core facades, errors, helpers"),
    (frozenset({"isolation", "containers", "slot_pool", "backends"}), "#f7e3cf", "where commands run"),
    (frozenset({"tools", "tool_context", "managed", "agent", "distill", "judges"}), "#dcefdc",
     "a rollout: tools, model calls, the loop"),
    (frozenset({"env", "agent_env", "html_view", "gguf"}), "#efe0f3", "the environment framework"),
    (frozenset({"testing", "environments", "checks", "port", "hermes_agent", "hermes_env", "commands", "__main__"}),
     "#f3f0c8",
     "what users run: environments, stand-ins, the hermes-agent front"),
)  # fmt: skip


# Imported by most packages for one small job: arrows to it would hide the structure.
UNDRAWN = ("_lazy",)
# Old paths of renamed packages (two-line shims for one release): not part of the design.
OLD_PATHS = ("envs", "sandbox", "models")


def colour(unit: str) -> str:
    return next(c for units, c, _ in GROUPS if unit in units)


def label(unit: str) -> str:
    if unit == "hermes_env":
        return "hermes_env"
    if unit == "_core":
        return "_core (Rust)"
    is_package = (_layers.package_dir() / unit).is_dir()
    return f"{unit}/" if is_package else f"{unit}.py"


def reduced(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The transitive reduction of an acyclic graph: an edge is kept when no longer path joins its ends."""

    def reach(start: str, skip: tuple[str, str]) -> set[str]:
        seen: set[str] = set()
        todo = [start]
        while todo:
            node = todo.pop()
            for nxt in graph.get(node, ()):
                if (node, nxt) != skip and nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    return {a: {b for b in bs if b not in reach(a, (a, b))} for a, bs in graph.items()}


# Where each unit sits across its row (0 = left), chosen by hand so that no drawn arrow runs through a box it does
# not end at; a unit not listed here (a new package) goes at the right end of its row until it is placed.
COLUMNS: dict[str, float] = {
    "_core": 4.5,
    "sync_bridge": 0.0, "_lazy": 1.2, "_renamed": 2.4, "errors": 3.6, "message_fields": 4.8, "timeouts": 6.0,
    "_layers": 7.2,
    "resources": 6.2, "trajectory": 4.8,
    "parsers": 3.2,
    "isolation": 0.7, "containers": 2.0,
    "slot_pool": 1.5,
    "backends": 1.5,
    "tools": 1.5,
    "managed": 4.6, "distill": 6.2, "judges": 3.4,
    "agent": 2.2,
    "tool_context": 0.0, "html_view": 7.4,
    "env": 3.2,
    "agent_env": 1.6, "gguf": 5.0,
    "testing": 4.2,
    "environments": 5.0,
    "checks": 6.0, "port": 7.4, "hermes_agent": 3.2,
    "commands": 1.6,
    "hermes_env": 3.2, "__main__": 1.6,
}  # fmt: skip


def draw(out: Path) -> None:
    edges = _layers.imports()
    graph = _layers.unit_graph(edges)
    kept = reduced({a: bs - set(UNDRAWN) for a, bs in graph.items() if a not in OLD_PATHS})
    rows = [sorted(u for u in layer if u not in OLD_PATHS) for layer in _layers.LAYERS]
    col_w, row_h = 2.0, 0.9
    width = col_w * 8
    fig, ax = plt.subplots(figsize=(width * 0.75, row_h * len(rows) * 0.75 + 1.2))
    place: dict[str, tuple[float, float]] = {}
    for level, row in enumerate(rows):
        for i, unit in enumerate(row):
            place[unit] = ((COLUMNS.get(unit, 7.0 + 0.3 * i) + 0.5) * col_w, level * row_h)
    box_w, box_h = 1.7, 0.4
    for a, bs in kept.items():
        for b in bs:
            (xa, ya), (xb, yb) = place[a], place[b]
            ax.add_patch(
                FancyArrowPatch(
                    (xa, ya - box_h / 2), (xb, yb + box_h / 2), arrowstyle="-|>", mutation_scale=9,
                    color="#6b6b6b", lw=0.8, alpha=0.75, connectionstyle="arc3,rad=0.0", zorder=1,
                )
            )  # fmt: skip
    for unit, (x, y) in place.items():
        ax.add_patch(
            FancyBboxPatch(
                (x - box_w / 2, y - box_h / 2), box_w, box_h, boxstyle="round,pad=0.02,rounding_size=0.08",
                fc=colour(unit), ec="#444444", lw=0.8, zorder=2,
            )
        )  # fmt: skip
        ax.text(x, y, label(unit), ha="center", va="center", fontsize=9, family="monospace", zorder=3)
    for level in range(len(rows)):
        ax.text(0.0, level * row_h, f"{level}", ha="right", va="center", fontsize=8, color="#888888")
    ax.set_xlim(-0.3, width + 1.0)
    ax.set_ylim(-0.7, (len(rows) - 1) * row_h + 0.7)
    ax.axis("off")
    handles = [FancyBboxPatch((0, 0), 1, 1, fc=c, ec="#444444") for _, c, _ in GROUPS]
    fig.legend(handles, [t for *_, t in GROUPS], loc="lower center", ncol=3, fontsize=8, frameon=False)
    drawn = sum(len(v) for v in kept.values())
    total = sum(len(v) for v in graph.values())
    ax.set_title(
        f"hermes_env: {len(place)} units in {len(rows)} layers (0 = bottom; hermes_env is the root package's names);\n"
        f"an arrow is an import: {drawn} of the {total} unit imports drawn, the others follow a drawn path "
        "(or go to _lazy.py)",
        fontsize=10,
    )
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    print(f"{out}: {len(place)} units, {total} unit imports ({drawn} drawn), {len(edges)} module imports")


if __name__ == "__main__":
    draw(Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "docs" / "import_graph.png")
