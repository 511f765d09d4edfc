"""Old names (``hermes_env._renamed.OLD_NAMES``, the one table of them): every old module path still imports as the
very module at its new path, every old name is the very object of its new name, and each warns once, a
DeprecationWarning at the user's line; ``python -m <old path>`` runs the new module with one FutureWarning."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hermes_env._renamed import OLD_NAMES, old_names

PACKAGE = Path(__file__).resolve().parents[2] / "python" / "hermes_env"

# Run in a fresh interpreter: "warns once" is per process, and this test's own process may have used an old path.
CHECK = r"""
import importlib, json, pkgutil, sys, warnings
from hermes_env._renamed import OLD_NAMES

def importable(name):
    try:
        return importlib.import_module(name)
    except ImportError:  # a module that needs an extra this machine lacks (ray, llama.cpp)
        return None

def seen(caught):
    return [[w.category.__name__, str(w.message), w.filename] for w in caught if " is now " in str(w.message)]

report = {}
for old, new in OLD_NAMES.items():
    if ":" in old:
        (module, name), (new_module, new_name) = old.split(":"), new.split(":")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            same = [getattr(importlib.import_module(module), name) is getattr(importlib.import_module(new_module),
                                                                              new_name) for _ in range(2)]
        report[old] = {"same": same, "warnings": seen(caught)}
        continue
    package = importlib.import_module(new)
    names = [new]
    if hasattr(package, "__path__"):
        names += [m.name for m in pkgutil.walk_packages(package.__path__, new + ".") if not m.name.endswith("__main__")]
    modules = {name: importable(name) for name in names}
    checked, different = [], []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for name, module in modules.items():
            if module is None:
                continue
            old_name = old + name[len(new):]
            if importlib.import_module(old_name) is not module or sys.modules[old_name] is not module:
                different.append(old_name)
            checked.append(old_name)
    report[old] = {"checked": checked, "different": different, "spec_names": sorted(
        {modules[n].__spec__.name for n in modules if modules[n] is not None} - set(names)),
        "warnings": seen(caught)}
print(json.dumps(report))
"""


def test_every_old_path_and_name_is_the_new_one_and_warns_once() -> None:
    proc = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert sorted(report) == sorted(OLD_NAMES)
    for old, new in OLD_NAMES.items():
        entry = report[old]
        # One warning for the whole package or the name, pointing at the line that used it.
        assert [w[0] for w in entry["warnings"]] == ["DeprecationWarning"], entry["warnings"]
        category, message, filename = entry["warnings"][0]
        assert filename == "<string>" and message.startswith(f"{old} is now {new}".replace(":", ".")), message
        if ":" in old:
            assert entry["same"] == [True, True], entry
        else:
            assert old in entry["checked"] and entry["different"] == [], entry
            assert entry["spec_names"] == [], f"a module took an old path as its own spec: {entry['spec_names']}"
    checked = sum(len(report[old].get("checked", [])) for old in OLD_NAMES)
    assert checked > 30  # every submodule, not just the tops


def test_the_table_pairs_a_module_with_a_module_and_a_name_with_a_name() -> None:
    assert all((":" in old) == (":" in new) for old, new in OLD_NAMES.items()), OLD_NAMES


def test_a_getattr_for_a_module_without_old_names_is_refused_and_other_names_go_on() -> None:
    with pytest.raises(ValueError, match="hermes_env.nothing has no old names in hermes_env._renamed.OLD_NAMES"):
        old_names("hermes_env.nothing")
    getattr_ = old_names("hermes_env.judges", then=lambda name: f"lazy {name}")
    assert getattr_("JudgeChat") == "lazy JudgeChat"
    with pytest.raises(AttributeError, match="module 'hermes_env.judges' has no attribute 'Nothing'"):
        old_names("hermes_env.judges")("Nothing")


def test_old_import_names_are_served_by_the_one_table_only() -> None:
    """No module but ``_renamed`` issues a DeprecationWarning: every old import path or name is in OLD_NAMES."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "_renamed.py" or "/environments/swe_lite/repos/" in str(path):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Name) and node.id == "DeprecationWarning":
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert found == [], f"old names are warned about by hermes_env._renamed (add them to OLD_NAMES): {found}"


def run_module(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, timeout=120)


def test_python_dash_m_old_path_runs_the_new_module_with_one_notice() -> None:
    old = run_module("hermes_env.envs.terminal_tasks", "--help")
    new = run_module("hermes_env.environments.terminal_tasks", "--help")
    assert old.returncode == 0 == new.returncode, old.stderr + new.stderr
    assert old.stdout == new.stdout and "demo" in old.stdout
    notices = [line for line in old.stderr.splitlines() if "Warning" in line]
    assert len(notices) == 1 and "FutureWarning" in notices[0], old.stderr
    assert "python -m hermes_env.environments.terminal_tasks" in notices[0]
    assert "Warning" not in new.stderr, new.stderr


def test_python_dash_m_old_module_path() -> None:
    # A module (not a package) under a renamed package: runs as __main__ too, with one notice.
    old = run_module("hermes_env.models.gguf_tokenizer", "--help")
    assert old.returncode == 0 and "usage" in old.stdout, old.stderr
    notices = [line for line in old.stderr.splitlines() if "Warning" in line]
    assert len(notices) == 1 and "FutureWarning: python -m hermes_env.models.gguf_tokenizer" in notices[0], old.stderr
