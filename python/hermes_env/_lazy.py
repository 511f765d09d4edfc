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
