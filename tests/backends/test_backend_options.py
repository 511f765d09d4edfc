"""The typed options of each backend (``hermes_env.backends.options``): one model per backend, a discriminated
union over them, each option in one place, a wrong option named with its path when the config loads."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hermes_env.backends import get_backend, register_backend
from hermes_env.backends.bwrap import BwrapBackend
from hermes_env.backends.docker import DockerBackend
from hermes_env.backends.local import LocalBackend
from hermes_env.backends.options import (
    DEPRECATED_NAMES,
    BwrapOptions,
    DockerOptions,
    LocalOptions,
)
from hermes_env.backends.registry import backend_config, backend_config_adapter
from hermes_env.backends.sandbox import SandboxOptions
from hermes_env.env.config import HermesAgentEnvConfig
from hermes_env.errors import BackendOptionsError
from hermes_env.isolation.limits import ResourceLimits
from hermes_env.slot_pool.config import ExecutorConfig, PoolConfig, SandboxPolicy
from pydantic import BaseModel, ConfigDict, ValidationError


@pytest.mark.parametrize(
    ("backend", "model"), [(LocalBackend, LocalOptions), (BwrapBackend, BwrapOptions), (DockerBackend, DockerOptions)]
)
def test_each_model_is_its_backends_constructor(backend: type[Any], model: type[BaseModel]) -> None:
    # The model's fields are the constructor's keyword arguments with the same defaults (the model is where a
    # config's options are checked; the constructor, where code builds a backend directly).
    params = {
        p.name: p.default
        for p in inspect.signature(backend.__init__).parameters.values()
        if p.name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
    }
    fields = {name: f.default for name, f in model.model_fields.items() if name not in ("kind", "ray_address")}
    if "limits" not in params:  # taken by the host-workspace base class
        assert inspect.signature(backend.__mro__[1].__init__).parameters["limits"].default is fields.pop("limits")
    assert params == fields
    assert backend.limit_options == model.limit_names and backend.options_model is model


def test_the_union_picks_the_member_by_kind() -> None:
    adapter = backend_config_adapter()
    for kind, model in [("local", LocalOptions), ("bwrap", BwrapOptions), ("docker", DockerOptions)]:
        assert type(adapter.validate_python({"kind": kind})) is model
    assert type(adapter.validate_python({"kind": "sandbox"})) is SandboxOptions
    with pytest.raises(ValidationError, match="union_tag_invalid|does not match any of the expected tags"):
        adapter.validate_python({"kind": "nomad"})


def test_each_sandbox_option_has_one_section() -> None:
    sections = SandboxOptions.SECTIONS
    names = [name for section in sections.values() for name in section if name != "limits"]
    assert len(names) == len(set(names))  # no flat name is owned twice
    assert set(ResourceLimits.model_fields).isdisjoint(names)  # limits live only in policy.limits
    config = backend_config(
        "sandbox",
        {"slots_per_worker": 3, "allow_network": True, "max_output_bytes": 999, "batch_window_ms": 1.0,
         "limits": {"cpu_seconds": 7}, "executor": {"max_timeout_s": 20}},
    )  # fmt: skip
    assert isinstance(config, SandboxOptions)
    assert config.pool == PoolConfig(slots_per_worker=3)
    assert config.policy == SandboxPolicy(allow_network=True, limits={"max_output_bytes": 999, "cpu_seconds": 7})
    assert config.executor == ExecutorConfig(batch_window_ms=1.0, max_timeout_s=20)


def test_flat_limits_move_into_limits() -> None:
    config = backend_config("bwrap", {"memory_bytes": "512MiB", "limits": {"cpu_seconds": 5}})
    assert isinstance(config, BwrapOptions) and config.limits is not None
    assert (config.limits.memory_bytes, config.limits.cpu_seconds) == (512 * 1024**2, 5)
    assert config.backend_kwargs() == {"limits": {"memory_bytes": 512 * 1024**2, "cpu_seconds": 5}}
    # local applies no memory limit, so it does not accept one flat (a ``limits`` mapping may hold any limit).
    with pytest.raises(BackendOptionsError, match=r"terminal_backend_options\.memory_bytes: backend 'local'"):
        backend_config("local", {"memory_bytes": "512MiB"})


@pytest.mark.parametrize(
    ("name", "options", "message"),
    [
        ("sandbox", {"slots_per_workr": 3}, r"terminal_backend_options\.slots_per_workr: backend 'sandbox' does not "
         r"accept option 'slots_per_workr' \(extra inputs are not permitted\); valid options: .*slots_per_worker"),
        ("sandbox", {"pool": {"slots_per_workr": 3}}, r"terminal_backend_options\.pool\.slots_per_workr: "),
        ("sandbox", {"pool": {"slots_per_worker": 0}}, r"terminal_backend_options\.pool\.slots_per_worker: .*"
         r"greater than or equal to 1 \(backend 'sandbox'\)"),
        ("bwrap", {"allow_netwrk": True}, r"\.allow_netwrk: backend 'bwrap' .*valid options: allow_network, "),
        ("docker", {"cpus": 0}, r"terminal_backend_options\.cpus: .*greater than 0 \(backend 'docker'\)"),
        ("docker", {"transport": "pipe"}, r"terminal_backend_options\.transport: "),
        ("local", {"kind": "bwrap"}, r"kind is 'bwrap' but terminal_backend is 'local'"),
    ],
)  # fmt: skip
def test_a_wrong_option_is_named_with_its_path(name: str, options: dict[str, Any], message: str) -> None:
    with pytest.raises(BackendOptionsError, match=message):
        backend_config(name, options)
    with pytest.raises(BackendOptionsError, match=message):
        get_backend(name, **options)


def test_valid_option_lists_leave_out_old_names() -> None:
    for model in (LocalOptions, BwrapOptions, DockerOptions, SandboxOptions):
        assert DEPRECATED_NAMES.isdisjoint(model.option_names())
    assert "ray_address" in DockerOptions.option_names() and "launcher" in SandboxOptions.option_names()


def test_the_env_config_checks_the_options_at_load(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match=r"terminal_backend_options\.slots_per_workr: backend 'sandbox'"):
        HermesAgentEnvConfig(terminal_backend="sandbox", terminal_backend_options={"slots_per_workr": 3})
    # The command line passes the options as one JSON string.
    config = HermesAgentEnvConfig(terminal_backend="local", terminal_backend_options=f'{{"root": "{tmp_path}"}}')
    assert config.terminal_backend_options == {"root": str(tmp_path)}
    assert config.backend_config == LocalOptions(root=tmp_path)
    with pytest.raises(ValidationError, match="terminal_backend_options must be a JSON object"):
        HermesAgentEnvConfig(terminal_backend_options="{root: x}")
    # hermes-agent's remote backends, and names registered later, are named when the run starts.
    assert HermesAgentEnvConfig(terminal_backend="modal", terminal_backend_options={"x": 1}).backend_config == {"x": 1}


class _OwnOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    root: Path | None = None


class _OwnBackend(LocalBackend):
    name = "own-options-test"
    options_model: ClassVar[type[BaseModel] | None] = _OwnOptions


def test_a_registered_backend_is_checked_by_its_own_model(tmp_path: Path) -> None:
    register_backend("own-options-test", _OwnBackend, replace=True)
    assert backend_config("own-options-test", {"root": str(tmp_path)}) == _OwnOptions(root=tmp_path)
    with pytest.raises(ValidationError, match=r"\.shell: backend 'own-options-test' does not accept .*root"):
        HermesAgentEnvConfig(terminal_backend="own-options-test", terminal_backend_options={"shell": "/bin/sh"})
    assert isinstance(get_backend("own-options-test", root=tmp_path), _OwnBackend)
    # A built-in name replaced by register_backend is checked as the replacement, not as the built-in.
    register_backend("local", _OwnBackend, replace=True)
    try:
        with pytest.raises(BackendOptionsError, match="does not accept option 'shell'"):
            backend_config("local", {"shell": "/bin/sh"})
    finally:
        register_backend("local", "hermes_env.backends.local:LocalBackend", replace=True)
    assert isinstance(backend_config("local", {"shell": "/bin/sh"}), LocalOptions)
