"""Names a package exports but imports only on first access (PEP 562 module ``__getattr__``).

Packages use it to keep ``import hermes_env.<package>`` cheap::

    __getattr__ = lazy_attributes(__name__, {"hermes_env.parsers.detect": ("detect_parser",)})

A name that moved keeps working for one release from its old place, with one ``DeprecationWarning``
(``moved=``, or :func:`warn_moved` for a whole module).
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any

_warned: set[str] = set()


def warn_moved(old: str, new: str) -> None:
    """One ``DeprecationWarning`` per process for ``old`` (a module or a name), which now lives in module ``new``."""
    if old in _warned:
        return
    _warned.add(old)
    warnings.warn(
        f"{old} is deprecated and goes in the next release: import it from {new}", DeprecationWarning, stacklevel=3
    )


def lazy_attributes(
    package: str, sources: Mapping[str, Iterable[str]], moved: Mapping[str, Iterable[str]] | None = None
) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``sources`` (module path -> names it defines): the module loads on first access.

    ``moved`` (same shape): names this package no longer exports, served from their one home with a warning once.
    """
    module_of = {name: module for module, names in sources.items() for name in names}
    moved_to = {name: module for module, names in (moved or {}).items() for name in names}

    def __getattr__(name: str) -> Any:
        if name in moved_to:
            warn_moved(f"{package}.{name}", moved_to[name])
            return getattr(importlib.import_module(moved_to[name]), name)
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)

    return __getattr__


_warned_renamed: set[tuple[str, str]] = set()


def renamed_attributes(
    module: str, renamed: Mapping[str, tuple[str, str]], then: Callable[[str], Any] | None = None
) -> Callable[[str], Any]:
    """A module ``__getattr__`` that keeps old names importable: ``renamed`` maps each old name to the
    (module path, name) it now has; the first use of an old name warns once (``FutureWarning``) with its
    new import path. Other names go to ``then`` (another such ``__getattr__``), else raise AttributeError."""

    def __getattr__(name: str) -> Any:
        target = renamed.get(name)
        if target is None:
            if then is not None:
                return then(name)
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        path, new = target
        if (module, name) not in _warned_renamed:
            _warned_renamed.add((module, name))
            warnings.warn(
                f"{module}.{name} is renamed: import {new} from {path}; the old name goes away in the next release",
                FutureWarning,
                stacklevel=2,
            )
        return getattr(importlib.import_module(path), new)

    return __getattr__


def import_reference(reference: str, what: str) -> Any:
    """The object a ``"module:attribute"`` reference names, its module imported now.

    ``what`` names the reference in errors (``"backend 'bwrap'"``, ``"--tools mypkg.tools:TOOLS"``). Every
    way this can go wrong (not such a reference, a module not importable from here, a module that raised
    while importing, no such attribute) is a ValueError saying which.
    """
    module_name, sep, attr = reference.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"{what}: expects module:attribute, got {reference!r}")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        raise ValueError(
            f"{what}: no module {err.name!r} importable from here; install the package that defines it "
            "or run from the folder that holds it (PYTHONPATH)"
        ) from None
    except Exception as err:  # noqa: BLE001 - the module itself failed while importing
        raise ValueError(f"{what}: importing {module_name} raised {type(err).__name__}: {err}") from err
    if not hasattr(module, attr):
        raise ValueError(f"{what}: module {module_name} has no attribute {attr!r}")
    return getattr(module, attr)
