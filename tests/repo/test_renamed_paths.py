"""Renamed modules and classes: every old path still imports, is the very module at its new path, and warns once."""

from __future__ import annotations

import json
import subprocess
import sys

from hermes_env._renamed import RENAMED_ATTRIBUTES, RENAMED_MODULES

# Run in a fresh interpreter: "warns once" is per process, and this test's own process may have used an old path.
CHECK = r"""
import importlib, json, pkgutil, sys, warnings
from hermes_env._renamed import RENAMED_ATTRIBUTES, RENAMED_MODULES

def importable(name):
    try:
        return importlib.import_module(name)
    except ImportError:  # a module that needs an extra this machine lacks (ray, llama.cpp)
        return None

report = {}
for old, new in RENAMED_MODULES.items():
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
    renamed = [w for w in caught if "is renamed" in str(w.message)]
    report[old] = {"checked": checked, "different": different, "spec_names": sorted(
        {modules[n].__spec__.name for n in modules if modules[n] is not None} - set(names)),
        "warnings": [[w.category.__name__, str(w.message), w.filename] for w in renamed]}
for module, names in RENAMED_ATTRIBUTES.items():
    for old, new in names.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            same = [getattr(importlib.import_module(module), old) is getattr(importlib.import_module(module), new)
                    for _ in range(2)]
        report[f"{module}:{old}"] = {"same": same, "warnings": [[w.category.__name__, str(w.message), w.filename]
                                                               for w in caught if "is renamed" in str(w.message)]}
print(json.dumps(report))
"""


def test_every_old_path_is_the_new_module_and_warns_once() -> None:
    proc = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    for old, new in RENAMED_MODULES.items():
        entry = report[old]
        assert old in entry["checked"] and entry["different"] == [], entry
        assert entry["spec_names"] == [], f"a module took an old path as its own spec: {entry['spec_names']}"
        # One warning for the whole package, pointing at the line that imported it.
        assert entry["warnings"] == [["DeprecationWarning", entry["warnings"][0][1], "<string>"]], entry["warnings"]
        assert f"{old} is renamed {new}" in entry["warnings"][0][1]
    assert sum(len(report[old]["checked"]) for old in RENAMED_MODULES) > 30  # every submodule, not just the tops
    for module, names in RENAMED_ATTRIBUTES.items():
        for old in names:
            entry = report[f"{module}:{old}"]
            assert entry["same"] == [True, True], entry
    # Each old class name warns once in all, though two modules export it.
    for old in {old for names in RENAMED_ATTRIBUTES.values() for old in names}:
        warned = [w for key, entry in report.items() if key.endswith(f":{old}") for w in entry["warnings"]]
        assert [w[0] for w in warned] == ["DeprecationWarning"] and warned[0][2] == "<string>", warned


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
    assert [line for line in old.stderr.splitlines() if "Warning" in line] == [
        line for line in old.stderr.splitlines() if "FutureWarning: python -m hermes_env.models.gguf_tokenizer" in line
    ] != []
