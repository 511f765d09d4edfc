"""The verifier toolbox: what a task's ``tests/test.sh`` would download at verify time, provisioned beforehand.

Terminal-Bench 2's ``test.sh`` runs ``apt-get install curl``, pipes ``https://astral.sh/uv/<v>/install.sh`` to
``sh``, sources ``$HOME/.local/bin/env`` and runs ``uvx -p 3.13 -w pytest==8.4.1 ... pytest /tests/...``. Here
the verifier has no network, and the task's files are not edited. Instead:

- **at build time** the packages ``test.sh`` installs with ``apt-get`` go into the task's image (a last layer);
- **the toolbox** (a directory on the host, mounted read-only at ``/opt/hermes-verifier`` in every container of
  the task: the agent can read it, never change it) holds uv and uvx from PyPI's ``uv`` wheel (the version the
  installer URL names), the wheels ``test.sh`` pins (with their dependencies, from PyPI) as uv's find-links, the
  Pythons its ``-p`` asks for (CPython built from source, relocatable: its own shared libraries beside it; each
  mounted read-only at ``/opt/hermes-verifier/python/<X.Y>``), and shims;
- **at verify time only** the shims come first on ``PATH``: ``curl`` of astral's installer prints an offline
  installer, which writes ``$HOME/.local/bin/env`` (and ``uv``/``uvx`` there) pointing at the toolbox, whatever
  the agent left there; ``apt-get update`` succeeds and ``apt-get install`` succeeds for packages the image has
  (other ``curl`` calls go to the image's curl); ``uv``/``uvx`` run offline (``UV_OFFLINE``, no configuration
  files, a fresh cache) with ``-p X.Y`` pointed at the toolbox's Python. So a pytest, python or site-packages the
  agent rewrites in the image, and an ``env`` file it plants, are never what runs the tests. ``pip install`` of
  a pinned wheel also works offline (``PIP_NO_INDEX``, ``PIP_FIND_LINKS`` at the toolbox's wheels), into the
  image's own Python as the script asks.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from hermes_env.containers.engine import ContainerEngine
from hermes_env.containers.local_bases import ensure_relocatable_python, locked, uv_binaries
from hermes_env.containers.recipes import cache_dir
from hermes_env.errors import ImageBuildError, ToolboxError

TOOLBOX_MOUNT = "/opt/hermes-verifier"
DEFAULT_UV_VERSION = "0.9.5"
DEFAULT_PYTHON = "3.13"
#: Platforms whose wheels run in the task images (glibc 2.36 and newer, x86-64).
_PLATFORMS = ("manylinux_2_36_x86_64", "manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64",
              "manylinux1_x86_64", "linux_x86_64")  # fmt: skip
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*(?:\[[A-Za-z0-9,._-]+\])?)==([A-Za-z0-9._+!-]+)$")
_UV_URL = re.compile(r"https://astral\.sh/uv/(?:(\d+\.\d+\.\d+)/)?install\.sh")


@dataclass
class VerifierNeeds:
    """What a ``test.sh`` fetches at verify time, as far as it can be read from the script."""

    apt_packages: list[str] = field(default_factory=list)
    uv_version: str | None = None
    pythons: list[str] = field(default_factory=list)
    wheels: list[str] = field(default_factory=list)
    uses_uv: bool = False


def _words(script: str) -> list[list[str]]:
    """The script's commands as word lists (continuations joined, comments dropped; best effort)."""
    text = re.sub(r"\\\n", " ", script)
    commands = []
    for line in text.splitlines():
        line = line.split(" #", 1)[0] if not line.lstrip().startswith("#") else ""
        for part in re.split(r"&&|\|\||;|\|", line):
            try:
                words = shlex.split(part, comments=True)
            except ValueError:
                words = part.split()
            if words:
                commands.append(words)
    return commands


_REQUIREMENT = re.compile(
    r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9,._-]+\])?((==|>=|<=|~=|!=|<|>)[A-Za-z0-9._+!*,<>=~-]+)?$"
)
#: uv / uvx options that take a value (the value is not the tool's name).
_UV_VALUE_OPTIONS = frozenset(
    {"-p", "--python", "-w", "--with", "--from", "--with-requirements", "--with-editable", "--index-url",
     "--extra-index-url", "--index", "--default-index", "-f", "--find-links", "--cache-dir", "--directory",
     "--project", "--env-file", "--constraint", "-c", "--override", "--config-file"}
)  # fmt: skip
#: ``pip install`` options that take a value (the value is not a package).
_PIP_OPTIONS_WITH_A_VALUE = frozenset(
    {"-r", "--requirement", "-c", "--constraint", "-e", "--editable", "-i", "--index-url", "--extra-index-url",
     "-f", "--find-links", "--target", "-t", "--prefix", "-p", "--python"}
)  # fmt: skip


def _requirements(program: str, words: list[str]) -> list[str]:
    """The packages a uv, uvx or pip command line fetches: ``-w``/``--with``/``--from`` values, the tool uvx runs,
    and ``pip install`` arguments (``pkg@1.0`` is read as ``pkg==1.0``)."""
    found: list[str] = []
    pip_install = (
        "pip" in words and "install" in words and (program in ("pip", "pip3", "uv") or program.startswith("python"))
    )
    if program not in ("uv", "uvx") and not pip_install:
        return found
    args = words[1:]
    if program == "uvx" or (program == "uv" and (args[:1] == ["run"] or args[:2] == ["tool", "run"])):
        args = args[2:] if args[:2] == ["tool", "run"] else args[1:] if args[:1] == ["run"] else args
        tool_seen = program == "uv" and words[1:2] == ["run"]  # uv run runs a script or command, not a package
        i = 0
        while i < len(args):
            arg = args[i]
            if arg in _UV_VALUE_OPTIONS and i + 1 < len(args):
                if arg in ("-w", "--with", "--from"):
                    found.extend(a for a in args[i + 1].split(",") if a)
                i += 2
                continue
            if arg.startswith(("--with=", "--from=")):
                found.extend(a for a in arg.split("=", 1)[1].split(",") if a)
            elif not arg.startswith("-") and not tool_seen:
                tool_seen = True
                if "--from" not in args:
                    found.append(arg)
            elif not arg.startswith("-"):
                break  # the tool's own arguments
            i += 1
    elif pip_install:
        rest = words[words.index("install") + 1 :]
        skip = False
        for arg in rest:
            if skip:
                skip = False
            elif arg in _PIP_OPTIONS_WITH_A_VALUE:
                skip = True
            elif not arg.startswith("-"):
                found.append(arg)
    out = []
    for requirement in found:
        if re.fullmatch(r"[\w.-]+@[\w.+!-]+", requirement):
            requirement = requirement.replace("@", "==", 1)
        if _REQUIREMENT.match(requirement):
            out.append(requirement)
    return out


def read_needs(test_sh: str) -> VerifierNeeds:
    """What ``test_sh`` would download: apt packages, the uv installer's version, ``-p`` Pythons, and the packages
    uv, uvx and pip fetch (pinned or not)."""
    needs = VerifierNeeds()
    url = _UV_URL.search(test_sh)
    if url:
        needs.uses_uv = True
        needs.uv_version = url.group(1) or DEFAULT_UV_VERSION
    for words in _words(test_sh):
        while words and ("=" in words[0] and not words[0].startswith("-")) or words[:1] in (["sudo"], ["env"]):
            words = words[1:]  # VAR=value prefixes, sudo, env
        if not words:
            continue
        program = os.path.basename(words[0])
        if program in ("apt-get", "apt") and "install" in words:
            args = words[words.index("install") + 1 :]
            skip = False
            for arg in args:
                if skip:
                    skip = False
                elif arg == "-o":
                    skip = True
                elif not arg.startswith("-") and re.fullmatch(r"[a-z0-9][a-z0-9+.-]*(=\S+)?", arg):
                    needs.apt_packages.append(arg.split("=", 1)[0])
        if program in ("uv", "uvx"):
            needs.uses_uv = True
            for i, arg in enumerate(words):
                if arg in ("-p", "--python") and i + 1 < len(words):
                    version = words[i + 1]
                elif arg.startswith("--python="):
                    version = arg.split("=", 1)[1]
                elif arg.startswith("-p") and len(arg) > 2 and arg[2].isdigit():
                    version = arg[2:]
                else:
                    version = None
                if version and re.fullmatch(r"3\.\d{1,2}", version) and version not in needs.pythons:
                    needs.pythons.append(version)
        for requirement in _requirements(program, words):
            if requirement not in needs.wheels:
                needs.wheels.append(requirement)
    if needs.uses_uv and not needs.pythons:
        needs.pythons.append(DEFAULT_PYTHON)
    if needs.uses_uv and needs.uv_version is None:
        needs.uv_version = DEFAULT_UV_VERSION
    needs.apt_packages = sorted(set(needs.apt_packages))
    return needs


# -- the toolbox on the host ------------------------------------------------------------------------------------------


def toolbox_dir() -> Path:
    return cache_dir().parent / "harbor-toolbox"


def _pip(*args: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pip", *args], capture_output=True, text=True, timeout=1800, check=False
    )
    if proc.returncode != 0:
        raise ToolboxError(f"pip {args[0]} {' '.join(a for a in args if not a.startswith('-'))[:200]} failed: "
                           f"{(proc.stderr or proc.stdout)[-800:]}")  # fmt: skip


def _ensure_uv(root: Path, version: str) -> None:
    target = root / "uv" / version
    if (target / "uv").is_file() and (target / "uvx").is_file():
        return
    try:
        source = uv_binaries(version)
    except ImageBuildError as exc:
        raise ToolboxError(str(exc)) from None
    staging = target.with_name(version + ".part")
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(source, staging)
    shutil.rmtree(target, ignore_errors=True)
    staging.replace(target)


def _ensure_wheels(root: Path, python: str, specs: list[str]) -> None:
    """Each requirement's wheels (and its dependencies') for ``python`` in the toolbox's wheel directory; one pip
    download per requirement, since a script may pin one package differently in two places."""
    wheels = root / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    done_file = root / "wheels.done.json"
    done = set(json.loads(done_file.read_text())) if done_file.is_file() else set()
    abi = "cp" + python.replace(".", "")
    for spec in specs:
        key = f"{python}:{spec}"
        if key in done:
            continue
        args = ["download", "--only-binary=:all:", "--dest", str(wheels), "--python-version", python,
                "--implementation", "cp", "--abi", abi, "--abi", "abi3", "--abi", "none"]  # fmt: skip
        for platform in _PLATFORMS:
            args += ["--platform", platform]
        _pip(*args, spec)
        done.add(key)
        done_file.write_text(json.dumps(sorted(done)))


_UV_SHIM = r"""#!/bin/sh
# hermes_env verifier toolbox: uv from the read-only toolbox, offline, with the toolbox's wheels and Pythons.
T=__T__
export UV_OFFLINE=1 UV_NO_CONFIG=1 UV_PYTHON_DOWNLOADS=never UV_FIND_LINKS="$T/wheels" UV_LINK_MODE=copy
export UV_CACHE_DIR="${HERMES_VERIFIER_CACHE:-$(mktemp -d)}/uv" PYTHONNOUSERSITE=1
unset UV_INDEX_URL UV_EXTRA_INDEX_URL UV_DEFAULT_INDEX UV_INDEX PYTHONPATH PYTHONHOME PYTHONSTARTUP
py() {
  case "$1" in
    3.[0-9]|3.[0-9][0-9])
      if [ -x "$T/python/$1/bin/python$1" ]; then echo "$T/python/$1/bin/python$1"
      else echo "hermes_env verifier: Python $1 was not provisioned in the toolbox" >&2; echo "$1"; fi ;;
    *) echo "$1" ;;
  esac
}
prev=
for a do
  shift
  case "$prev" in -p|--python) a=$(py "$a") ;; esac
  case "$a" in --python=*) a="--python=$(py "${a#--python=}")" ;; esac
  set -- "$@" "$a"
  prev=$a
done
exec "$T/uv/__V__/uv" __SUB__ "$@"
"""

_CURL_SHIM = r"""#!/bin/sh
# hermes_env verifier toolbox: astral.sh's uv installer comes from the toolbox; anything else goes to the image's curl.
T=__T__
out=
prev=
for a do
  case "$prev" in -o|--output) out=$a ;; esac
  case "$a" in
    https://astral.sh/uv/*install.sh|http://astral.sh/uv/*install.sh) hit=1 ;;
  esac
  prev=$a
done
if [ -n "$hit" ]; then
  if [ -n "$out" ]; then cat "$T/uv-install.sh" > "$out"; else cat "$T/uv-install.sh"; fi
  exit 0
fi
PATH=$(printf '%s' "$PATH" | tr ':' '\n' | grep -v -x "$T/shims" | tr '\n' ':')
export PATH
exec curl "$@"
"""

_APT_SHIM = r"""#!/bin/sh
# hermes_env verifier toolbox: no network at verify time; packages test.sh installs were put in the image when it
# was built, so installing them succeeds and anything else is an error that says so.
cmd=
pkgs=
skip=
for a do
  if [ -n "$skip" ]; then skip=; continue; fi
  case "$a" in
    -o|-c|-t) skip=1 ;;
    -*) ;;
    *) if [ -z "$cmd" ]; then cmd=$a; else pkgs="$pkgs ${a%%=*}"; fi ;;
  esac
done
case "$cmd" in
  update|clean|autoclean|autoremove) exit 0 ;;
  install)
    missing=
    for p in $pkgs; do
      dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
    done
    if [ -z "$missing" ]; then echo "hermes_env verifier: already in the image:$pkgs"; exit 0; fi
    echo "hermes_env verifier: no network at verify time, and not in the image:$missing" >&2
    exit 100 ;;
  *) echo "hermes_env verifier: apt-get $cmd is not available at verify time (no network)" >&2; exit 100 ;;
esac
"""

_INSTALLER = r"""#!/bin/sh
# hermes_env verifier toolbox: stands in for astral.sh's uv installer, offline. uv and uvx come from the
# read-only toolbox; what is written here (whatever was here before) only points at it.
set -e
T=__T__
dir="${UV_INSTALL_DIR:-${XDG_BIN_HOME:-$HOME/.local/bin}}"
mkdir -p "$dir"
for f in env uv uvx; do rm -rf "$dir/$f"; done
printf 'export PATH="%s:$PATH"\n' "$T/shims" > "$dir/env"
printf '#!/bin/sh\nexec %s/shims/uv "$@"\n' "$T" > "$dir/uv"
printf '#!/bin/sh\nexec %s/shims/uvx "$@"\n' "$T" > "$dir/uvx"
chmod 755 "$dir/uv" "$dir/uvx"
echo "installed uv __V__ (hermes_env verifier toolbox, offline) to $dir"
"""


def _write(path: Path, text: str, mode: int = 0o755) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.chmod(mode)
    tmp.replace(path)


@dataclass(frozen=True)
class Toolbox:
    """A provisioned toolbox: the read-only mounts a task's containers get."""

    mounts: tuple[tuple[str, str], ...]
    needs_key: str

    @property
    def shims(self) -> str:
        return f"{TOOLBOX_MOUNT}/shims"


def provision(engine: ContainerEngine, needs: VerifierNeeds) -> Toolbox:
    """Make the toolbox hold what ``needs`` asks for (idempotent, shared by all tasks and, under a file lock, by
    every process on this machine); its mounts."""
    with locked("harbor-toolbox"):
        return _provision(engine, needs)


def _provision(engine: ContainerEngine, needs: VerifierNeeds) -> Toolbox:
    root = toolbox_dir()
    root.mkdir(parents=True, exist_ok=True)
    uv_version = needs.uv_version or DEFAULT_UV_VERSION
    _ensure_uv(root, uv_version)
    python_mounts = []
    for version in needs.pythons:
        python_dir = ensure_relocatable_python(engine, version)
        (root / "python" / version).mkdir(parents=True, exist_ok=True)  # the mount point
        python_mounts.append((str(python_dir), f"{TOOLBOX_MOUNT}/python/{version}"))
    # Pins installed with pip into the image's own Python (no -p to read) are fetched for DEFAULT_PYTHON; pure
    # wheels, pytest's among them, serve any version.
    for version in needs.pythons or [DEFAULT_PYTHON]:
        _ensure_wheels(root, version, needs.wheels)
    # Shims name one uv version; a toolbox per uv version keeps tasks pinning different ones apart.
    shims = root / "shims" / uv_version
    shims.mkdir(parents=True, exist_ok=True)
    (root / "wheels").mkdir(exist_ok=True)
    for name, sub in (("uv", ""), ("uvx", "tool run")):
        _write(shims / name, _UV_SHIM.replace("__T__", TOOLBOX_MOUNT).replace("__V__", uv_version)
               .replace("__SUB__", sub))  # fmt: skip
    _write(shims / "curl", _CURL_SHIM.replace("__T__", TOOLBOX_MOUNT))
    _write(shims / "apt-get", _APT_SHIM)
    _write(shims / "apt", _APT_SHIM)
    installer = root / "installers" / uv_version
    installer.mkdir(parents=True, exist_ok=True)
    _write(installer / "uv-install.sh", _INSTALLER.replace("__T__", TOOLBOX_MOUNT).replace("__V__", uv_version))
    mounts = (
        (str(root), TOOLBOX_MOUNT),
        (str(shims), f"{TOOLBOX_MOUNT}/shims"),
        (str(installer / "uv-install.sh"), f"{TOOLBOX_MOUNT}/uv-install.sh"),
        *python_mounts,
    )
    (root / "uv-install.sh").touch(exist_ok=True)  # the mount point
    key = hashlib.sha256(json.dumps([needs.__dict__, mounts], sort_keys=True).encode()).hexdigest()[:16]
    return Toolbox(mounts=mounts, needs_key=key)
