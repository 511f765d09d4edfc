"""Names a package exports but imports only on first access (PEP 562 module ``__getattr__``).

Packages use it to keep ``import hermes_env.<package>`` cheap, or to break an import cycle::

    __getattr__ = lazy_attributes(__name__, {"hermes_env.backends.sandbox": ("SandboxBackend",)})
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
