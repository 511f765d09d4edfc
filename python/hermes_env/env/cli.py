"""Command-line entry point shared by the example environments.

atroposlib's ``cli()`` provides ``serve``/``process``/``evaluate``; this wrapper turns the errors a
user can cause (a bad flag value, a missing dataset file, an unknown toolset, a phase the
server cannot provide) into one ``error: ...`` message and exit status 2, instead of a traceback;
Ctrl-C exits with status 130 and no traceback.
"""

from __future__ import annotations

import sys
from typing import Any

from pydantic import ValidationError

from hermes_env.env.dataset import DatasetError
from hermes_env.env.phases import PhaseError


def format_validation_error(err: ValidationError) -> str:
    lines = []
    for problem in err.errors():
        where = ".".join(str(p) for p in problem.get("loc", ())) or "config"
        lines.append(f"  {where}: {str(problem.get('msg', '')).removeprefix('Value error, ')}")
    return f"invalid configuration ({err.title}):\n" + "\n".join(lines)


def run_cli(env_cls: Any) -> None:
    """``env_cls.cli()`` with user errors reported in one message, and Ctrl-C as exit status 130."""
    try:
        env_cls.cli()
    except ValidationError as err:
        sys.exit(f"error: {format_validation_error(err)}")
    except (DatasetError, PhaseError) as err:
        sys.exit(f"error: {err}")
    except KeyboardInterrupt:
        # Ctrl-C outside process mode's own handling (start-up, a second Ctrl-C): no traceback.
        print("interrupted", file=sys.stderr)
        sys.exit(130)
