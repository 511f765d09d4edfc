"""One exception tree (``hermes_env.errors``) and one vocabulary of error kinds for parsers, loop and backends."""

from __future__ import annotations

import ast
import importlib
import inspect
import sys
import warnings
from pathlib import Path
from typing import get_args

import hermes_env.errors as errors
import pytest
from hermes_env import _renamed
from hermes_env.isolation.result import ExecResult
from hermes_env.parsers import ISSUE_KINDS

PACKAGE = Path(errors.__file__).parent


def test_parse_issue_kinds_are_the_rust_cores() -> None:
    assert list(get_args(errors.ParseIssueKind)) == ISSUE_KINDS


def test_shared_kind_names_mean_one_thing() -> None:
    # The loop reports the parser's names for the same faults (no invalid_json beside malformed_json).
    tool, parse, exec_ = (set(get_args(k)) for k in (errors.ToolErrorKind, errors.ParseIssueKind, errors.ExecErrorKind))
    assert {"unknown_tool", "malformed_json", "bad_arguments"} <= tool & parse
    assert {"unknown_tool", "bad_arguments"} <= exec_ & parse
    assert ExecResult.model_fields["error_type"].annotation == errors.ExecErrorKind | None
    rollout = set(errors.ROLLOUT_FAILURE_KINDS)
    assert len(errors.ERROR_KINDS) == len(set(errors.ERROR_KINDS)) == len(tool | parse | exec_ | rollout)
    # A rollout failure is not a tool call's or a parser's fault: its names stand apart.
    assert not rollout & (tool | parse | exec_)


def test_every_exception_is_a_hermes_env_error_and_keeps_its_builtin_base() -> None:
    classes = [c for _, c in inspect.getmembers(errors, inspect.isclass) if issubclass(c, BaseException)]
    assert all(issubclass(c, errors.HermesEnvError) for c in classes)
    assert issubclass(errors.WorkspacePathError, PermissionError)
    assert issubclass(errors.SlotAcquireTimeout, TimeoutError)
    assert issubclass(errors.ToolArgumentError, ValueError)
    assert issubclass(errors.BackendUnavailableError, errors.EnvSetupError)
    assert issubclass(errors.TokenizerUnavailable, OSError)
    assert issubclass(errors.TokenizerUnavailable, errors.ConfigError)


def test_every_exception_is_defined_in_errors() -> None:
    classes = [c for _, c in inspect.getmembers(errors, inspect.isclass) if issubclass(c, BaseException)]
    assert classes and all(c.__module__ == "hermes_env.errors" for c in classes)


def test_only_errors_exports_exceptions() -> None:
    """One import path per exception: no other module lists one in ``__all__`` (``env.errors`` is deprecated whole)."""
    names = {n for n, c in inspect.getmembers(errors, inspect.isclass) if issubclass(c, BaseException)}
    found = []
    for path in PACKAGE.rglob("*.py"):
        skipped = (PACKAGE / "errors.py", PACKAGE / "env" / "errors.py")
        if path in skipped or "/environments/swe_lite/repos/" in str(path):
            continue
        for node in ast.parse(path.read_text()).body:
            targets = [node.target] if isinstance(node, ast.AugAssign) else getattr(node, "targets", [])
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                listed = {c.value for c in ast.walk(node.value) if isinstance(c, ast.Constant)}
                found += [f"{path.relative_to(PACKAGE)}:{n}" for n in sorted(listed & names)]
    assert found == [], f"export exceptions from hermes_env.errors only: {found}"


@pytest.mark.parametrize(
    ("module", "names"),
    [
        ("hermes_env.backends", ["BackendUnavailableError", "WorkspacePathError"]),
        ("hermes_env.containers", ["ContainerError", "EngineUnavailableError", "ImageBuildError"]),
        ("hermes_env.distill", ["TeacherError"]),
        ("hermes_env.env", ["EnvSetupError", "PolicyCallError", "RolloutFailed"]),
        ("hermes_env.isolation", ["FileTooLargeError"]),
        ("hermes_env.judges", ["JudgeError"]),
        ("hermes_env.gguf", ["GGUFError"]),
        ("hermes_env.slot_pool", ["PoolClosedError", "SlotAcquireTimeout", "WorkerStartError"]),
        ("hermes_env.slot_pool.launchers", ["WorkerStartError"]),
        ("hermes_env.tools", ["ToolArgumentError", "ToolCallError", "ToolsetUnavailableError"]),
    ],
)
def test_a_package_s_old_exception_names_still_work_with_one_warning(
    module: str, names: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_renamed, "_warned", set())
    package = importlib.import_module(module)
    for name in names:
        said = f"{module}.{name} is now hermes_env.errors.{name}: import {name} from hermes_env.errors"
        with pytest.warns(DeprecationWarning, match=said):
            assert getattr(package, name) is getattr(errors, name)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert getattr(package, name) is getattr(errors, name)  # warned once only
        assert name not in package.__all__


def test_the_old_env_errors_module_warns_and_names_the_same_things(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_renamed, "_warned", set())
    monkeypatch.delitem(sys.modules, "hermes_env.env.errors", raising=False)
    with pytest.warns(DeprecationWarning, match="hermes_env.env.errors is now hermes_env.errors"):
        old = importlib.import_module("hermes_env.env.errors")
    assert old.PolicyCallError is errors.PolicyCallError and old.classify_policy_error is errors.classify_policy_error


def test_sandbox_backend_is_imported_from_the_backends() -> None:
    import hermes_env.slot_pool

    with pytest.raises(AttributeError, match="import it from hermes_env.backends.sandbox"):
        hermes_env.slot_pool.SandboxBackend  # noqa: B018


def test_no_other_module_defines_a_public_exception() -> None:
    builtin_bases = {"Exception", "RuntimeError", "ValueError", "OSError", "PermissionError", "TimeoutError"}
    found = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "errors.py" and path.parent == PACKAGE or "/environments/swe_lite/repos/" in str(path):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                bases = {b.id for b in node.bases if isinstance(b, ast.Name)} | {
                    b.attr for b in node.bases if isinstance(b, ast.Attribute)
                }
                if bases & builtin_bases or any(b.endswith("Error") for b in bases):
                    found.append(f"{path.relative_to(PACKAGE)}:{node.name}")
    assert found == [], f"exceptions belong in hermes_env/errors.py: {found}"
