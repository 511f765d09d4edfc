"""The isolation layer is the only place that builds sandbox command lines."""

from __future__ import annotations

from pathlib import Path

import hermes_env

PACKAGE = Path(hermes_env.__file__).parent


def test_exactly_one_module_builds_a_bubblewrap_command_line() -> None:
    builders = sorted(
        str(p.relative_to(PACKAGE))
        for p in PACKAGE.rglob("*.py")
        if any(
            flag in p.read_text()
            for flag in ('"--unshare-all"', '"--ro-bind"', '"--unshare-pid"', '"--die-with-parent"')
        )
    )
    assert builders == ["isolation/bubblewrap.py"]
