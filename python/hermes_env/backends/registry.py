"""Backends by name: ``get_backend("local" | "bwrap" | "sandbox" | <registered>, **options)``.

One table maps each name to ``"module:Class"``; the module is imported on first use, so naming
``local`` never imports the slot pool (or Ray). ``register_backend`` adds a name for a backend of
your own: a ``"module:Class"`` string, an :class:`ExecutionBackend` subclass, or a factory
called with the options.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Annotated, Any

from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from hermes_env._lazy import import_reference
from hermes_env.backends.base import ExecutionBackend
from hermes_env.backends.options import (
    BackendOptions,
    BwrapOptions,
    DockerOptions,
    LocalOptions,
    check_kind,
    options_error,
    validate_options,
)

BackendTarget = str | type[ExecutionBackend] | Callable[..., ExecutionBackend]

_BACKENDS: dict[str, BackendTarget] = {
    "local": "hermes_env.backends.local:LocalBackend",
    "bwrap": "hermes_env.backends.bwrap:BwrapBackend",
    "docker": "hermes_env.backends.docker:DockerBackend",
    "sandbox": "hermes_env.backends.sandbox:SandboxBackend",
}
# The built-in backends, whose options are the typed union ``backends.options.BackendConfig``.
_BUILTIN: dict[str, BackendTarget] = dict(_BACKENDS)


def register_backend(name: str, target: BackendTarget, *, replace: bool = False) -> None:
    """Make ``get_backend(name, **options)`` build ``target`` (``"module:Class"``, a class, or a factory)."""
    if not name or not isinstance(name, str):
        raise ValueError(f"backend name must be a non-empty string, got {name!r}")
    if isinstance(target, str) and target.count(":") != 1:
        raise ValueError(f"backend target must be 'module:Class', got {target!r}")
    if name in _BACKENDS and not replace and _BACKENDS[name] != target:
        raise ValueError(f"backend {name!r} is already registered (pass replace=True to override)")
    _BACKENDS[name] = target


def backend_names() -> list[str]:
    """Names get_backend accepts."""
    return sorted(_BACKENDS)


def is_builtin(name: str) -> bool:
    """True when ``name`` is one of hermes_env's own backends (and was not replaced by ``register_backend``)."""
    return name in _BUILTIN and _BACKENDS.get(name) == _BUILTIN[name]


def options_model_of(name: str) -> type[Any] | None:
    """The ``options_model`` a registered backend class declares (None: a factory, a class without one, or a
    name not registered; an import failure is reported by ``get_backend``)."""
    if name not in _BACKENDS:
        return None
    try:
        target = _resolve(name)
    except ValueError:
        return None
    if isinstance(target, type) and issubclass(target, ExecutionBackend):
        model: type[Any] | None = target.__dict__.get("options_model")
        return model
    return None


#: hermes-agent's remote terminal backends, which need a cloud account or another machine: what each is.
REMOTE_BACKENDS = {
    "modal": "Modal cloud sandboxes",
    "daytona": "Daytona cloud sandboxes",
    "ssh": "a remote machine over ssh",
    "singularity": "Singularity/Apptainer containers",
}


def _resolve(name: str) -> type[ExecutionBackend] | Callable[..., ExecutionBackend]:
    target = _BACKENDS.get(name)
    if target is None and name in REMOTE_BACKENDS:
        raise ValueError(
            f"terminal backend {name!r} ({REMOTE_BACKENDS[name]}) is hermes-agent's and does not run here; pass "
            "--env.terminal_backend docker (a container per rollout, task images built locally) or "
            "--env.terminal_backend bwrap (a bubblewrap sandbox per rollout)"
        )
    if target is None:
        raise ValueError(f"unknown terminal backend {name!r}; valid backends: {', '.join(backend_names())}")
    if not isinstance(target, str):
        return target
    return import_reference(target, f"backend {name!r}")  # type: ignore[no-any-return]


def get_backend(name: str, **options: Any) -> ExecutionBackend:
    """A new backend instance; ValueError naming the valid backends (or options) for an unknown one."""
    target = _resolve(name)
    if isinstance(target, type) and issubclass(target, ExecutionBackend):
        return target.from_options(**options)
    return target(**options)


@functools.cache
def backend_config_adapter() -> TypeAdapter[Any]:
    """A TypeAdapter of :data:`BackendConfig`, the built-in backends' options discriminated by ``kind``."""
    from hermes_env.backends.sandbox import SandboxOptions

    union = Annotated[LocalOptions | BwrapOptions | DockerOptions | SandboxOptions, Field(discriminator="kind")]
    return TypeAdapter(union)


def backend_config(name: str, options: Mapping[str, Any] | None = None) -> BaseModel | dict[str, Any]:
    """The typed options of backend ``name``: a :data:`BackendConfig` member for a built-in backend, the
    backend's own ``options_model`` for a registered class that declares one, else the options as given
    (a backend not registered yet, or one of hermes-agent's remote backends, is named at start).
    BackendOptionsError naming the field when an option is wrong."""
    data = dict(options or {})
    if is_builtin(name):
        check_kind(name, data)
        adapter = backend_config_adapter()
        try:
            return adapter.validate_python({**data, "kind": name})
        except ValidationError as err:
            model = _builtin_model(name)
            raise options_error(name, model.option_names(), err, strip=1) from None
    model = options_model_of(name)
    if model is None:
        return data
    return validate_options(model, name, data)


def _builtin_model(name: str) -> type[BackendOptions]:
    if name == "sandbox":
        from hermes_env.backends.sandbox import SandboxOptions

        return SandboxOptions
    return {"local": LocalOptions, "bwrap": BwrapOptions, "docker": DockerOptions}[name]
