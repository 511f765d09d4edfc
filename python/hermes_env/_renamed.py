"""Old names: every import path and name that was renamed or moved, in one table, served for one release.

:data:`OLD_NAMES` maps each old path to its new one: a module as ``"a.b"``, a name in a module as
``"a.b:Name"`` (the form of :func:`hermes_env._lazy.import_reference`). The first use of each old path
warns once, as a ``DeprecationWarning`` pointing at the user's importing line (:func:`warn_old`); the old
paths and names go away in the next release.

- A renamed module's old path holds a two-line shim (``hermes_env/envs/__init__.py``, ...) that calls
  :func:`alias`. From then on the old path and every dotted path under it are the *same module objects* as
  the new ones (a meta-path finder maps ``hermes_env.envs.X.Y`` to ``hermes_env.environments.X.Y``; nothing is
  loaded twice). ``python -m <old path>`` runs the new module as ``__main__`` and says once, as a
  ``FutureWarning`` (shown by default: it is the user's own command that has to change), which command to use.
- An old name in a module is served by that module's ``__getattr__``, built by :func:`old_names` (which may
  hand other names on to :func:`hermes_env._lazy.lazy_attributes`).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types
import warnings
from collections.abc import Callable, Sequence
from typing import Any

# old path -> new path: "module" for a module (for a package, every submodule follows it), "module:Name" for a
# name. A plain literal: hermes_env._layers reads it to draw each old name's module importing its new one.
OLD_NAMES: dict[str, str] = {
    # renamed packages and modules
    "hermes_env.envs": "hermes_env.environments",
    "hermes_env.sandbox": "hermes_env.slot_pool",
    "hermes_env.models": "hermes_env.gguf",
    "hermes_env.env.errors": "hermes_env.errors",
    # renamed classes, so that each name means one thing (hermes_env.parsers.ToolCall is the parser's call,
    # hermes_env.agent_env.ToolResult the AgentEnv result)
    "hermes_env.agent.steps:ToolCall": "hermes_env.agent.steps:AgentToolCall",
    "hermes_env.slot_pool:ToolResult": "hermes_env.isolation.result:ExecResult",
    "hermes_env.slot_pool.protocol:ToolResult": "hermes_env.isolation.result:ExecResult",
    "hermes_env.tools:ToolRunContext": "hermes_env.tools.registry:ToolCallContext",
    "hermes_env.tools.registry:ToolRunContext": "hermes_env.tools.registry:ToolCallContext",
    # exceptions that packages once re-exported: hermes_env.errors is their one home
    "hermes_env.backends:BackendUnavailableError": "hermes_env.errors:BackendUnavailableError",
    "hermes_env.backends:WorkspacePathError": "hermes_env.errors:WorkspacePathError",
    "hermes_env.containers:ContainerError": "hermes_env.errors:ContainerError",
    "hermes_env.containers:EngineUnavailableError": "hermes_env.errors:EngineUnavailableError",
    "hermes_env.containers:ImageBuildError": "hermes_env.errors:ImageBuildError",
    "hermes_env.containers:ImageUnavailableError": "hermes_env.errors:ImageUnavailableError",
    "hermes_env.distill:TeacherError": "hermes_env.errors:TeacherError",
    "hermes_env.env:EnvSetupError": "hermes_env.errors:EnvSetupError",
    "hermes_env.env:PolicyCallError": "hermes_env.errors:PolicyCallError",
    "hermes_env.env:RolloutFailed": "hermes_env.errors:RolloutFailed",
    "hermes_env.gguf:GGUFError": "hermes_env.errors:GGUFError",
    "hermes_env.isolation:BackendUnavailableError": "hermes_env.errors:BackendUnavailableError",
    "hermes_env.isolation:FileTooLargeError": "hermes_env.errors:FileTooLargeError",
    "hermes_env.isolation:WorkspacePathError": "hermes_env.errors:WorkspacePathError",
    "hermes_env.judges:JudgeError": "hermes_env.errors:JudgeError",
    "hermes_env.slot_pool:PoolClosedError": "hermes_env.errors:PoolClosedError",
    "hermes_env.slot_pool:SlotAcquireTimeout": "hermes_env.errors:SlotAcquireTimeout",
    "hermes_env.slot_pool:WorkerStartError": "hermes_env.errors:WorkerStartError",
    "hermes_env.slot_pool.launchers:WorkerStartError": "hermes_env.errors:WorkerStartError",
    "hermes_env.tools:ToolArgumentError": "hermes_env.errors:ToolArgumentError",
    "hermes_env.tools:ToolCallError": "hermes_env.errors:ToolCallError",
    "hermes_env.tools:ToolsetUnavailableError": "hermes_env.errors:ToolsetUnavailableError",
    "hermes_env.trajectory:TrajectoryDivergence": "hermes_env.errors:TrajectoryDivergence",
    "hermes_env.trajectory:TrajectoryError": "hermes_env.errors:TrajectoryError",
}

# The table's two kinds apart: old module -> new module; module -> {old name: (new module, new name)}.
_MODULES: dict[str, str] = {old: new for old, new in OLD_NAMES.items() if ":" not in old}


def _names_by_module() -> dict[str, dict[str, tuple[str, str]]]:
    found: dict[str, dict[str, tuple[str, str]]] = {}
    for old, new in OLD_NAMES.items():
        if ":" in old:
            module, _, name = old.partition(":")
            new_module, _, new_name = new.partition(":")
            found.setdefault(module, {})[name] = (new_module, new_name)
    return found


_NAMES = _names_by_module()

_warned: set[str] = set()
_IMPORTLIB_DIR = os.path.dirname(importlib.__file__)


def warn_old(old: str) -> None:
    """Warn once per process that ``old`` (a key of :data:`OLD_NAMES`) is old: a ``DeprecationWarning`` at the
    user's line, saying what to import instead."""
    new = OLD_NAMES[old]
    if ":" in new:
        module, _, name = new.partition(":")
        message = f"{_dotted(old)} is now {_dotted(new)}: import {name} from {module}"
    else:
        message = f"{old} is now {new}: import from {new}"
    what = "name" if ":" in old else "path"
    _warn_once(old, f"{message} (the old {what} goes away in the next release)", DeprecationWarning)


def old_names(module: str, then: Callable[[str], Any] | None = None) -> Callable[[str], Any]:
    """A module ``__getattr__`` (PEP 562) serving ``module``'s old names from :data:`OLD_NAMES` (the new
    object, after :func:`warn_old`). Other names go to ``then`` (e.g. a :func:`~hermes_env._lazy.lazy_attributes`),
    else raise AttributeError."""
    names = _NAMES.get(module)
    if names is None:
        raise ValueError(
            f"{module} has no old names in hermes_env._renamed.OLD_NAMES: add them there, or drop old_names"
        )

    def __getattr__(name: str) -> Any:
        target = names.get(name)
        if target is None:
            if then is not None:
                return then(name)
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        warn_old(f"{module}:{name}")
        new_module, new_name = target
        return getattr(importlib.import_module(new_module), new_name)

    return __getattr__


def new_path(old_path: str) -> str:
    """The current dotted path of ``old_path`` (a renamed module or anything under one)."""
    for old, new in _MODULES.items():
        if old_path == old or old_path.startswith(old + "."):
            return new + old_path[len(old) :]
    raise KeyError(f"{old_path} is not under a renamed module (hermes_env._renamed.OLD_NAMES)")


def alias(old: str) -> None:
    """Run by the shim at ``old``: the old path becomes the new module, and paths under it follow."""
    warn_old(old)
    if not any(isinstance(finder, _RenamedFinder) for finder in sys.meta_path):
        # First: the path finder would otherwise load a second copy through the new package's __path__.
        sys.meta_path.insert(0, _RenamedFinder())
    sys.modules[old] = importlib.import_module(_MODULES[old])


def run_as_main(old_path: str) -> None:
    """``python -m <old path>``: run the new module (or package) as ``__main__``, after one notice."""
    import runpy  # only for this command: importing an old name stays cheap

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
        if not any(fullname.startswith(old + ".") for old in _MODULES):
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


def _dotted(path: str) -> str:
    return path.replace(":", ".")


def _warn_once(key: str, message: str, category: type[Warning]) -> None:
    if key in _warned:
        return
    _warned.add(key)
    warnings.warn(message, category, stacklevel=_caller_level())


def _caller_level() -> int:
    """``stacklevel`` of the first frame outside this module, the import system, the shims and the modules'
    ``__getattr__`` that serve old names: the user's line."""
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and (
        frame.f_code.co_filename == __file__
        or frame.f_code.co_filename.startswith(("<frozen importlib", _IMPORTLIB_DIR))
        or frame.f_globals.get("__name__") in _MODULES
        or (frame.f_code.co_name == "__getattr__" and frame.f_globals.get("__name__") in _NAMES)
    ):
        frame = frame.f_back
        # warnings.warn itself steps over the import system's _bootstrap frames: they do not count.
        name = frame.f_code.co_filename
        level += not ("importlib" in name and "_bootstrap" in name)
    return level
