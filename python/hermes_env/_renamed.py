"""Old import paths of renamed modules and classes: they keep working for one release, and each warns once.

A renamed module's old path holds a two-line shim (``hermes_env/envs/__init__.py``,
...) that calls :func:`alias`. From then on the old path and every dotted path under it are the *same module
objects* as the new ones (a meta-path finder maps ``hermes_env.envs.X.Y`` to ``hermes_env.environments.X.Y``;
nothing is loaded twice), and the first use of an old path warns (``DeprecationWarning``, pointing at the
importing line). ``python -m <old path>`` runs the new module as ``__main__`` and says once, as a
``FutureWarning`` (shown by default: it is the user's own command that has to change), which command to use.
A renamed class keeps its old name through its module's ``__getattr__`` and :func:`renamed_attribute`.
The old paths and names go away in the next release.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import runpy
import sys
import types
import warnings
from collections.abc import Sequence

# old dotted path -> new one; for a package, every submodule follows it.
RENAMED_MODULES: dict[str, str] = {
    "hermes_env.envs": "hermes_env.environments",
    "hermes_env.sandbox": "hermes_env.slot_pool",
    "hermes_env.models": "hermes_env.gguf",
}
# module -> {old attribute name: new name}; the module's ``__getattr__`` calls renamed_attribute.
RENAMED_ATTRIBUTES: dict[str, dict[str, str]] = {
    "hermes_env.tools.registry": {"ToolRunContext": "ToolCallContext"},
    "hermes_env.tools": {"ToolRunContext": "ToolCallContext"},
}

_warned: set[str] = set()
_IMPORTLIB_DIR = os.path.dirname(importlib.__file__)


def new_path(old_path: str) -> str:
    """The current dotted path of ``old_path`` (a renamed module or anything under one)."""
    for old, new in RENAMED_MODULES.items():
        if old_path == old or old_path.startswith(old + "."):
            return new + old_path[len(old) :]
    raise KeyError(f"{old_path} is not under a renamed module (hermes_env._renamed.RENAMED_MODULES)")


def alias(old: str) -> None:
    """Run by the shim at ``old``: the old path becomes the new module, and paths under it follow."""
    new = RENAMED_MODULES[old]
    message = f"{old} is renamed {new}: import from {new} (the old path goes away in the next release)"
    _warn_once(old, message, DeprecationWarning)
    if not any(isinstance(finder, _RenamedFinder) for finder in sys.meta_path):
        # First: the path finder would otherwise load a second copy through the new package's __path__.
        sys.meta_path.insert(0, _RenamedFinder())
    sys.modules[old] = importlib.import_module(new)


def renamed_attribute(module: str, name: str) -> object:
    """A module ``__getattr__``'s answer for ``name``: the renamed attribute (warning once), else AttributeError."""
    new = RENAMED_ATTRIBUTES.get(module, {}).get(name)
    if new is None:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    _warn_once(
        f"attribute {name}",
        f"{name} is renamed {new}: use {module}.{new} (the old name goes away in the next release)",
        DeprecationWarning,
    )
    return getattr(sys.modules[module], new)


def run_as_main(old_path: str) -> None:
    """``python -m <old path>``: run the new module (or package) as ``__main__``, after one notice."""
    new = new_path(old_path).removesuffix(".__main__")
    old = old_path.removesuffix(".__main__")
    _warn_once(
        f"python -m {old}",
        f"python -m {old} is renamed python -m {new}; the old command goes away in the next release",
        FutureWarning,
    )
    runpy.run_module(new, run_name="__main__", alter_sys=True)


class _RenamedFinder(importlib.abc.MetaPathFinder):
    """Finds ``<old>.X`` as an alias of ``<new>.X`` for each renamed package."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if not any(fullname.startswith(old + ".") for old in RENAMED_MODULES):
            return None
        new = new_path(fullname)
        new_spec = importlib.util.find_spec(new)
        if new_spec is None:
            return None
        is_package = new_spec.submodule_search_locations is not None
        spec = importlib.machinery.ModuleSpec(
            fullname, _RenamedLoader(new), origin=new_spec.origin, is_package=is_package
        )
        if is_package:
            spec.submodule_search_locations = list(new_spec.submodule_search_locations or [])
        return spec


class _RenamedLoader(importlib.abc.Loader):
    """Loads an old path as the module already at (or now imported from) its new path."""

    def __init__(self, new: str) -> None:
        self.new = new
        self._spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = importlib.import_module(self.new)
        self._spec = module.__spec__
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        # The import system set the alias spec on the module; the module keeps its own.
        module.__spec__ = self._spec

    def get_code(self, fullname: str) -> types.CodeType:
        """What ``python -m <old path>`` runs (runpy asks the loader for code, not for a module)."""
        source = f"import hermes_env._renamed\nhermes_env._renamed.run_as_main({fullname!r})\n"
        return compile(source, f"<{fullname}>", "exec")


def _warn_once(key: str, message: str, category: type[Warning]) -> None:
    if key in _warned:
        return
    _warned.add(key)
    warnings.warn(message, category, stacklevel=_caller_level())


def _caller_level() -> int:
    """``stacklevel`` of the first frame outside this module, the import system and the shims: the user's line."""
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and (
        frame.f_code.co_filename == __file__
        or frame.f_code.co_filename.startswith(("<frozen importlib", _IMPORTLIB_DIR))
        or frame.f_globals.get("__name__") in RENAMED_MODULES
        or (frame.f_code.co_name == "__getattr__" and frame.f_globals.get("__name__") in RENAMED_ATTRIBUTES)
    ):
        frame = frame.f_back
        # warnings.warn itself steps over the import system's _bootstrap frames: they do not count.
        name = frame.f_code.co_filename
        level += not ("importlib" in name and "_bootstrap" in name)
    return level
