"""One exception tree (``hermes_env.errors``) and one vocabulary of error kinds for parsers, loop and backends."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import get_args

import hermes_env.errors as errors
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


def test_old_import_paths_name_the_same_classes() -> None:
    from hermes_env.backends import WorkspacePathError
    from hermes_env.backends.base import BackendFailure
    from hermes_env.env import EnvSetupError, RolloutFailed
    from hermes_env.env.dataset import DatasetError
    from hermes_env.env.errors import PolicyCallError
    from hermes_env.env.phases import PhaseError
    from hermes_env.env.preflight import InferenceServerUnreachable
    from hermes_env.sandbox import PoolClosedError, SlotAcquireTimeout, WorkerStartError
    from hermes_env.tools.registry import ToolArgumentError, ToolCallError

    for cls in (WorkspacePathError, EnvSetupError, RolloutFailed, DatasetError, PhaseError, InferenceServerUnreachable,
                PoolClosedError, SlotAcquireTimeout, WorkerStartError, ToolArgumentError, ToolCallError,
                BackendFailure, PolicyCallError):  # fmt: skip
        assert getattr(errors, cls.__name__) is cls


def test_no_other_module_defines_a_public_exception() -> None:
    builtin_bases = {"Exception", "RuntimeError", "ValueError", "OSError", "PermissionError", "TimeoutError"}
    found = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "errors.py" and path.parent == PACKAGE or "/envs/swe_lite/repos/" in str(path):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                bases = {b.id for b in node.bases if isinstance(b, ast.Name)} | {
                    b.attr for b in node.bases if isinstance(b, ast.Attribute)
                }
                if bases & builtin_bases or any(b.endswith("Error") for b in bases):
                    found.append(f"{path.relative_to(PACKAGE)}:{node.name}")
    assert found == [], f"exceptions belong in hermes_env/errors.py: {found}"
