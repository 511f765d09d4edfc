"""Names a package exports but imports only on first access (PEP 562 module ``__getattr__``).

Packages use it to keep ``import hermes_env.<package>`` cheap::

    __getattr__ = lazy_attributes(__name__, {"hermes_env.parsers.detect": ("detect_parser",)})

Old names a package still serves for a release are :mod:`hermes_env._renamed`'s (``old_names``, which hands
other names on to a ``lazy_attributes``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any


def lazy_attributes(package: str, sources: Mapping[str, Iterable[str]]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``sources`` (module path -> names it defines): the module loads on first access."""
    module_of = {name: module for module, names in sources.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)

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
