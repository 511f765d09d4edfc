"""What a test.sh fetches at verify time, read from the script (so it can be provisioned beforehand)."""

from __future__ import annotations

from pathlib import Path

from hermes_env.environments.harbor.toolbox import read_needs

TASKS = Path(__file__).parent / "tasks"

# The shape of Terminal-Bench 2's test.sh (written here, not copied): curl, uv's installer, uvx with pins.
TB2_STYLE = """#!/bin/bash
apt-get update
apt-get install -y curl
curl -LsSf https://astral.sh/uv/0.9.5/install.sh | sh
source $HOME/.local/bin/env
uvx \\
  -p 3.12 \\
  -w pytest==8.4.1 \\
  -w rdflib==7.1.4 \\
  -w pytest-json-ctrf==0.3.5 \\
  pytest --ctrf /logs/verifier/ctrf.json /tests/test_outputs.py -rA
if [ $? -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
"""


def test_reads_a_tb2_style_script() -> None:
    needs = read_needs(TB2_STYLE)
    assert needs.apt_packages == ["curl"]
    assert needs.uv_version == "0.9.5"
    assert needs.pythons == ["3.12"]
    # the -w pins, and the tool uvx runs (any version: uv resolves it with the pin)
    assert needs.wheels == ["pytest==8.4.1", "rdflib==7.1.4", "pytest-json-ctrf==0.3.5", "pytest"]


def test_other_spellings() -> None:
    script = (
        "DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends -o Dpkg::Options::=x jq=1.6 git\n"
        "curl -LsSf https://astral.sh/uv/install.sh -o /tmp/i.sh && sh /tmp/i.sh\n"
        "uv venv --python=3.11 && uv pip install numpy==2.1.0 'pytest==8.3.0'\n"
    )
    needs = read_needs(script)
    assert needs.apt_packages == ["git", "jq"]
    assert needs.uv_version == "0.9.5"  # the installer names no version: the default
    assert needs.pythons == ["3.11"]
    assert needs.wheels == ["numpy==2.1.0", "pytest==8.3.0"]


def test_packages_uv_and_pip_fetch() -> None:
    script = (
        "uvx -p 3.13 --with numpy --with=pandas==2.2.3 pytest@8.3.0 /tests/t.py -k 'not slow'\n"
        "uv run --with pytest==8.0.0 pytest /tests\n"
        'python3 -m pip install -q "pytest==8.4.1" requests -r /tests/requirements.txt\n'
        "uv tool run --from black==24.1.0 black --check .\n"
    )
    assert read_needs(script).wheels == [
        "numpy", "pandas==2.2.3", "pytest==8.3.0", "pytest==8.0.0", "pytest==8.4.1", "requests", "black==24.1.0"
    ]  # fmt: skip


def test_a_script_without_uv_needs_no_python() -> None:
    needs = read_needs((TASKS / "offline-note" / "tests" / "test.sh").read_text())
    assert (needs.uses_uv, needs.pythons, needs.wheels, needs.apt_packages) == (False, [], [], [])


def test_network_failures_are_recognised() -> None:
    from hermes_env.environments.harbor.runner import network_failure

    line = "fatal: unable to access 'https://github.com/x/y/': Could not resolve host: github.com"
    assert network_failure(f"Cloning into 'ocaml'...\n{line}\n") == line
    assert network_failure("E: Failed to fetch http://deb.debian.org/x  Temporary failure resolving 'deb.debian.org'")
    assert network_failure("FAILED test_outputs.py::test_count - assert 11 == 10") is None
