"""Backends by name: ``get_backend("local" | "bwrap" | "sandbox" | <registered>, **options)``.

``sandbox`` (the slot pool) lives in ``hermes_env.sandbox``; it is looked up lazily so this
module never imports it eagerly: importing ``hermes_env.sandbox`` is expected to call
``register_backend("sandbox", factory)``; failing that, a module attribute
``create_backend(**options)`` or ``SandboxBackend`` class is used.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from typing import Any

from hermes_env.backends.base import ExecutionBackend

BackendFactory = Callable[..., ExecutionBackend]

_FACTORIES: dict[str, BackendFactory] = {}
# name -> module that registers it when imported
_LAZY_MODULES: dict[str, str] = {"sandbox": "hermes_env.sandbox"}


def register_backend(name: str, factory: BackendFactory, *, replace: bool = False) -> None:
    """Make ``get_backend(name, **options)`` call ``factory(**options)``."""
    if not name or not isinstance(name, str):
        raise ValueError(f"backend name must be a non-empty string, got {name!r}")
    if name in _FACTORIES and not replace and _FACTORIES[name] is not factory:
        raise ValueError(f"backend {name!r} is already registered (pass replace=True to override)")
    _FACTORIES[name] = factory


def accepted_options(cls: type) -> list[str]:
    """Keyword options a backend class accepts, following ``**kwargs`` up to its base classes."""
    names: list[str] = []
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        params = inspect.signature(init).parameters.values()
        names += [p.name for p in params if p.name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            break
    return sorted(set(names))


def _construct(cls: type[ExecutionBackend], options: dict[str, Any]) -> ExecutionBackend:
    valid = accepted_options(cls)
    unknown = sorted(set(options) - set(valid))
    if unknown:
        raise ValueError(
            f"backend {cls.name!r} does not accept option(s) {', '.join(map(repr, unknown))}; "
            f"valid options: {', '.join(valid)}"
        )
    return cls(**options)


def _local(**options: Any) -> ExecutionBackend:
    from hermes_env.backends.local import LocalBackend

    return _construct(LocalBackend, options)


def _bwrap(**options: Any) -> ExecutionBackend:
    from hermes_env.backends.bwrap import BwrapBackend

    return _construct(BwrapBackend, options)


def _docker(**options: Any) -> ExecutionBackend:
    from hermes_env.backends.docker import DockerBackend

    return _construct(DockerBackend, options)


register_backend("local", _local)
register_backend("bwrap", _bwrap)
register_backend("docker", _docker)


def backend_names() -> list[str]:
    """Names get_backend accepts (lazily provided ones included)."""
    return sorted(set(_FACTORIES) | set(_LAZY_MODULES))


def _load_lazy(name: str) -> BackendFactory | None:
    module_name = _LAZY_MODULES.get(name)
    if module_name is None:
        return None
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"backend {name!r} needs module {module_name!r}, which failed to import: {exc}") from exc
    if name in _FACTORIES:
        return _FACTORIES[name]
    for attr in ("create_backend", "SandboxBackend"):
        factory = getattr(module, attr, None)
        if callable(factory):
            return factory
    raise ValueError(
        f"module {module_name!r} neither registered backend {name!r} (register_backend) "
        "nor defines create_backend / SandboxBackend"
    )


def get_backend(name: str, **options: Any) -> ExecutionBackend:
    """A new backend instance; ValueError naming the valid backends for an unknown name."""
    factory = _FACTORIES.get(name) or _load_lazy(name)
    if factory is None:
        raise ValueError(f"unknown terminal backend {name!r}; valid backends: {', '.join(backend_names())}")
    return factory(**options)
