"""Local stand-ins for upstream base images (``debian:bookworm``, ``ubuntu:24.04``, ``python:3.13-slim-bookworm``)
made from the distribution mirrors, for machines that reach no container registry.

- ``hermes_env/os:<suite>``: ``debootstrap --variant=minbase`` of Debian bookworm or trixie, or Ubuntu noble (with
  debootstrap's ``gutsy`` script, which serves every later Ubuntu release), plus ``ca-certificates``.
- ``hermes_env/python:<X.Y>-<suite>``: that release with Python X.Y where the official ``python`` images put it
  (``/usr/local/bin/python``, ``python3``, ``pip``, ``pip3``). The release's own Python is used when its version
  is X.Y (bookworm 3.11, trixie 3.13, noble 3.12; pip may install system-wide, as in the official images);
  any other version is built once from CPython's source, the ``python3.X`` orig tarball of a Debian or Ubuntu
  suite that ships it (checked against the archive's sha256): 3.9, 3.10, 3.12, 3.13, 3.14 and newer.

The machine's CA bundle (``$SSL_CERT_FILE``, else ``/etc/ssl/certs/ca-certificates.crt``) is in every one of them,
as the system bundle and as a local certificate that ``update-ca-certificates`` keeps, and ``SSL_CERT_FILE``,
``PIP_CERT``, ``REQUESTS_CA_BUNDLE`` and ``/etc/pip.conf`` point at it: where package indexes are reached through a
TLS-intercepting proxy, ``pip``, ``uv`` and ``curl`` work in the images as on the host.

Each image carries the label ``hermes_env=base`` and ``hermes_env.recipe=<digest>`` (recipe, CA bundle, mirror);
it is made once and made again only when that digest changes. :func:`ensure_relocatable_python` builds CPython the
same way into a directory that runs from anywhere (the interpreter with its shared libraries beside it) in any
image with glibc 2.36 or newer; the Harbor verifier toolbox runs tests with it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import lzma
import os
import re
import shutil
import subprocess
import tempfile
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from hermes_env.containers.engine import LABEL, ContainerEngine
from hermes_env.containers.recipes import cache_dir
from hermes_env.errors import ImageBuildError, UvUnavailableError

RECIPE_LABEL = "hermes_env.recipe"
_RECIPE_VERSION = "local base v1"
DEBIAN_MIRROR_ENV = "HERMES_DEBIAN_MIRROR"
UBUNTU_MIRROR_ENV = "HERMES_UBUNTU_MIRROR"
CA_IN_IMAGE = "/etc/ssl/certs/ca-certificates.crt"
_CA_LOCAL_CERT = "usr/local/share/ca-certificates/hermes_env-host.crt"
_BUILD_TIMEOUT_S = 3600


@dataclass(frozen=True, slots=True)
class Release:
    distro: str
    suite: str
    #: The Python version the release ships as python3.
    python: str
    #: Runtime libraries a CPython built from source needs (package names differ between releases).
    python_runtime: tuple[str, ...]


_T64 = ("libssl3t64", "libreadline8t64")
RELEASES: dict[str, Release] = {
    "bookworm": Release(
        "debian", "bookworm", "3.11",
        ("libssl3", "libreadline8", "libffi8", "libsqlite3-0", "libbz2-1.0", "liblzma5", "zlib1g", "libncursesw6",
         "libuuid1", "netbase", "tzdata"),
    ),
    "trixie": Release(
        "debian", "trixie", "3.13",
        (*_T64, "libffi8", "libsqlite3-0", "libbz2-1.0", "liblzma5", "zlib1g", "libncursesw6", "libuuid1",
         "netbase", "tzdata"),
    ),
    "noble": Release(
        "ubuntu", "noble", "3.12",
        (*_T64, "libffi8", "libsqlite3-0", "libbz2-1.0", "liblzma5", "zlib1g", "libncursesw6", "libuuid1",
         "netbase", "tzdata"),
    ),
}  # fmt: skip
#: The release CPython is built on for the verifier toolbox: the oldest glibc of all releases above.
TOOLBOX_SUITE = "bookworm"


def host_ca_bundle() -> Path | None:
    """The machine's CA bundle, None when it has none."""
    for candidate in (os.environ.get("SSL_CERT_FILE"), "/etc/ssl/certs/ca-certificates.crt"):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


def _mirror(distro: str) -> str:
    if distro == "ubuntu":
        return os.environ.get(UBUNTU_MIRROR_ENV, "http://archive.ubuntu.com/ubuntu")
    return os.environ.get(DEBIAN_MIRROR_ENV, "http://deb.debian.org/debian")


def _sources(release: Release, mirror: str) -> str:
    if release.distro == "ubuntu":
        parts = "main restricted universe multiverse"
        return "\n".join(f"deb {mirror} {release.suite}{pocket} {parts}" for pocket in ("", "-updates", "-security"))
    security = mirror.rsplit("/", 1)[0] + "/debian-security" if mirror.endswith("/debian") else None
    lines = [f"deb {mirror} {release.suite} main", f"deb {mirror} {release.suite}-updates main"]
    if security:
        lines.append(f"deb {security} {release.suite}-security main")
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class LocalBase:
    """A local base image: a release, with a Python version or without."""

    suite: str
    python: str | None = None

    def __post_init__(self) -> None:
        if self.suite not in RELEASES:
            raise ValueError(f"no local base for release {self.suite!r}; known: {', '.join(RELEASES)}")
        if self.python is not None and not re.fullmatch(r"3\.\d{1,2}", self.python):
            raise ValueError(f"python version must look like 3.13, got {self.python!r}")

    @property
    def release(self) -> Release:
        return RELEASES[self.suite]

    @property
    def ref(self) -> str:
        if self.python is None:
            return f"hermes_env/os:{self.suite}"
        return f"hermes_env/python:{self.python}-{self.suite}"

    @property
    def builds_python(self) -> bool:
        return self.python is not None and self.python != self.release.python

    def describe(self) -> str:
        if self.python is None:
            return f"{self.release.distro} {self.suite}"
        how = "built from source" if self.builds_python else f"{self.release.distro}'s own"
        return f"{self.release.distro} {self.suite} with Python {self.python} ({how})"


def _digest(*parts: bytes | str) -> str:
    h = hashlib.sha256(_RECIPE_VERSION.encode() + b"\0")
    for part in parts:
        h.update(part.encode() if isinstance(part, str) else part)
        h.update(b"\0")
    return h.hexdigest()[:32]


def _ca_bytes() -> bytes:
    ca = host_ca_bundle()
    return ca.read_bytes() if ca is not None else b""


_CA_ENV = ("SSL_CERT_FILE", "PIP_CERT", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS")


def _ca_changes() -> tuple[str, ...]:
    return tuple(f"ENV {name}={CA_IN_IMAGE}" for name in _CA_ENV) if host_ca_bundle() else ()


def _put_ca(rootfs: Path) -> None:
    """The machine's CA bundle as the system bundle, as a certificate ``update-ca-certificates`` keeps, and pip's."""
    data = _ca_bytes()
    if not data:
        return
    for rel in (CA_IN_IMAGE.lstrip("/"), _CA_LOCAL_CERT):
        target = rootfs / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            target.unlink()  # a symlink into the package's files must not be written through
        target.write_bytes(data)
    (rootfs / "etc/pip.conf").write_text(f"[global]\ncert = {CA_IN_IMAGE}\n")


def _label(engine: ContainerEngine, ref: str, label: str) -> str | None:
    fmt = '{{index .Labels "' + label + '"}}'
    result = engine.run_sync("image", "inspect", "--format", fmt, ref, check=False, timeout=60)
    return result.text.strip() or None if result.returncode == 0 else None


@contextlib.contextmanager
def locked(name: str) -> Iterator[None]:
    """A file lock across processes, so two runs never make the same base at once."""
    directory = cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    fd = os.open(directory / f"{name}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _os_digest(release: Release) -> str:
    return _digest("os", release.suite, _mirror(release.distro), _ca_bytes())


def ensure_os_image(engine: ContainerEngine, suite: str, *, log: Path | None = None) -> str:
    """``hermes_env/os:<suite>``, made now unless an image of the same recipe exists; returns its reference."""
    base = LocalBase(suite)
    release = base.release
    digest = _os_digest(release)
    if _label(engine, base.ref, RECIPE_LABEL) == digest:
        return base.ref
    if os.geteuid() != 0 or shutil.which("debootstrap") is None:
        raise ImageBuildError(
            f"the local base {base.ref} ({base.describe()}) is made with debootstrap as root; run as root with "
            "debootstrap installed, or map the upstream image to one your engine has (image map entry 'image:REF')"
        )
    from hermes_env.containers.setup import debootstrap_image

    with locked(f"os-{suite}"):
        if _label(engine, base.ref, RECIPE_LABEL) == digest:
            return base.ref
        mirror = _mirror(release.distro)
        replaced = engine.image_id_sync(base.ref)
        packages = ("ca-certificates", *(("ubuntu-keyring",) if release.distro == "ubuntu" else ()))
        try:
            debootstrap_image(
                engine,
                base.ref,
                suite=suite,
                mirror=mirror,
                packages=packages,
                sources_line=_sources(release, mirror),
                # debootstrap knows Ubuntu releases up to its own age; its gutsy script serves every later one.
                script="/usr/share/debootstrap/scripts/gutsy" if release.distro == "ubuntu" else None,
                check_gpg=release.distro != "ubuntu" or Path("/usr/share/keyrings/ubuntu-archive-keyring.gpg").exists(),
                prepare=_put_ca,
                changes=(*_ca_changes(), f"LABEL {RECIPE_LABEL}={digest}"),
            )
        except Exception as exc:  # debootstrap's errors are EngineUnavailableError; a base is an image here
            raise ImageBuildError(f"making the local base {base.ref} failed: {exc}") from exc
        _drop_replaced(engine, replaced, base.ref)
    return base.ref


# -- CPython from the Debian archive ----------------------------------------------------------------------------------

#: Where CPython's source is looked for, in order: (distribution, suite). Each archive keeps the versions its current
#: releases ship: Debian 3.9 (bullseye) 3.11 3.13 3.14 ..., Ubuntu 3.8 (focal) 3.10 (jammy) 3.12 (noble).
_SOURCE_SUITES = (
    ("debian", "sid"), ("debian", "trixie"), ("debian", "bookworm"), ("debian", "bullseye"),
    ("ubuntu", "noble-updates"), ("ubuntu", "noble"), ("ubuntu", "jammy-updates"), ("ubuntu", "jammy"),
    ("ubuntu", "focal-updates"), ("ubuntu", "focal"),
)  # fmt: skip


def _fetch(url: str, timeout: float = 300) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 - a mirror URL
        return response.read()


def cpython_source(version: str) -> Path:
    """CPython ``version``'s source tarball: the ``python<version>`` orig tarball of the first Debian or Ubuntu
    suite that has it (:data:`_SOURCE_SUITES`), cached, and checked against the archive's sha256."""
    sources_dir = cache_dir().parent / "sources"
    sources_dir.mkdir(parents=True, exist_ok=True)
    cached = sorted(sources_dir.glob(f"python{version}_{version}.*.orig.tar.xz"))
    if cached:
        return cached[-1]
    package = f"python{version}"
    problems = []
    for distro, suite in _SOURCE_SUITES:
        mirror = _mirror(distro)
        try:
            index = lzma.decompress(_fetch(f"{mirror}/dists/{suite}/main/source/Sources.xz")).decode("utf-8", "replace")
        except (OSError, lzma.LZMAError) as exc:
            problems.append(f"{distro} {suite}: {exc}")
            continue
        for stanza in index.split("\n\n"):
            if not stanza.startswith(f"Package: {package}\n"):
                continue
            directory = re.search(r"^Directory: (\S+)", stanza, re.M)
            checksum = re.search(rf"^ ([0-9a-f]{{64}}) \d+ ({re.escape(package)}_[\d.]+\.orig\.tar\.xz)$", stanza, re.M)
            if directory is None or checksum is None:
                continue
            sha256, name = checksum.groups()
            data = _fetch(f"{mirror}/{directory.group(1)}/{name}")
            if hashlib.sha256(data).hexdigest() != sha256:
                raise ImageBuildError(f"{name} from {mirror} does not match the archive's sha256; try again later")
            target = sources_dir / name
            target.with_suffix(".part").write_bytes(data)
            target.with_suffix(".part").replace(target)
            return target
    raise ImageBuildError(
        f"CPython {version}'s source is in none of the Debian and Ubuntu suites searched "
        f"({', '.join(f'{d} {s}' for d, s in _SOURCE_SUITES)}{'; ' + '; '.join(problems) if problems else ''}); "
        f"map this image to a release that ships Python {version}, or to an image you have ('image:REF')"
    )


_BUILD_DEPS = (
    "build-essential pkg-config patchelf xz-utils libssl-dev zlib1g-dev libbz2-dev libffi-dev liblzma-dev "
    "libsqlite3-dev libncurses-dev libreadline-dev uuid-dev"
)
_APT = "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends"

_CPYTHON_RECIPE = """\
ARG HERMES_OS
FROM ${{HERMES_OS}} AS build
RUN {apt} {deps} >/dev/null && rm -rf /var/lib/apt/lists/*
COPY python.tar.xz /src/python.tar.xz
RUN mkdir -p /src/py && tar -xf /src/python.tar.xz -C /src/py --strip-components=1 && cd /src/py \\
 && ./configure --prefix=/usr/local --with-ensurepip=install >/dev/null \\
 && make -j"$(nproc)" >/dev/null 2>&1 && make install >/dev/null 2>&1 \\
 && cd / && rm -rf /src /usr/local/lib/python{v}/test /usr/local/lib/python{v}/idlelib/idle_test \\
 && patchelf --set-rpath '$ORIGIN/../lib' /usr/local/bin/python{v} \\
 && for so in /usr/local/lib/python{v}/lib-dynload/*.so; do patchelf --set-rpath '$ORIGIN/../..' "$so"; done \\
 && /usr/local/bin/python{v} -c 'import ssl, sqlite3, ctypes, lzma, bz2, zlib, uuid, readline'

# A copy that runs anywhere with this glibc or newer: the interpreter, its library, and its shared libraries.
FROM build AS relocatable
RUN mkdir -p /opt/python/bin /opt/python/lib && cp -a /usr/local/bin/python{v} /opt/python/bin/ \\
 && ln -s python{v} /opt/python/bin/python3 && cp -a /usr/local/lib/python{v} /opt/python/lib/ \\
 && ldd /usr/local/bin/python{v} /usr/local/lib/python{v}/lib-dynload/*.so | awk '/=> \\//{{print $3}}' \\
    | sort -u | grep -v -E '/(libc|libm|libpthread|libdl|librt|libutil|ld-linux[^/]*)\\.so' \\
    | xargs -r -I{{}} cp -L {{}} /opt/python/lib/

# What the image gets: the install without its static library and bytecode (as the official images drop them).
FROM build AS installed
RUN rm -f /usr/local/lib/libpython{v}.a /usr/local/lib/python{v}/config-{v}-*/libpython{v}.a \
 && find /usr/local/lib/python{v} -depth -type d -name __pycache__ -exec rm -rf {{}} +

FROM ${{HERMES_OS}}
RUN {apt} {runtime} >/dev/null && rm -rf /var/lib/apt/lists/*
COPY --from=installed /usr/local /usr/local
RUN ldconfig && cd /usr/local/bin && ln -sf python{v} python3 && ln -sf python3 python \\
 && ln -sf pip{v} pip3 && ln -sf pip3 pip && python --version
"""

_SYSTEM_PYTHON_RECIPE = """\
ARG HERMES_OS
FROM ${{HERMES_OS}}
RUN {apt} python3 python3-pip python3-venv >/dev/null && rm -rf /var/lib/apt/lists/* \\
 && rm -f /usr/lib/python3*/EXTERNALLY-MANAGED \\
 && ln -sf /usr/bin/python3 /usr/local/bin/python && ln -sf /usr/bin/pip3 /usr/local/bin/pip \\
 && python --version
"""


def _build(engine: ContainerEngine, context: Path, tag: str, *, labels: dict[str, str], args: dict[str, str],
           target: str | None, log: Path) -> None:  # fmt: skip
    argv = ["build", "--label", f"{LABEL}=base", "-t", tag]
    for key, value in labels.items():
        argv += ["--label", f"{key}={value}"]
    for key, value in args.items():
        argv += ["--build-arg", f"{key}={value}"]
    if target:
        argv += ["--target", target]
    argv.append(str(context))
    replaced = engine.image_id_sync(tag)
    with log.open("ab") as out:
        proc = subprocess.run(
            engine.argv(*argv), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=dict(engine.env),
            timeout=_BUILD_TIMEOUT_S, check=False,
        )  # fmt: skip
    if proc.returncode != 0:
        tail = log.read_text(errors="replace")[-1500:].strip()
        raise ImageBuildError(f"building the local base {tag} failed (exit {proc.returncode}; log {log}):\n{tail}")
    _drop_replaced(engine, replaced, tag)


def _drop_replaced(engine: ContainerEngine, replaced: str | None, tag: str) -> None:
    """Remove the image an earlier recipe left under ``tag``, unless something still uses it: no ``--force``, so
    the engine refuses while a container runs from it or an image is built on it (task images keep their base)."""
    if replaced is not None and replaced != engine.image_id_sync(tag):
        engine.run_sync("rmi", replaced, check=False, timeout=120)


def _python_recipe(base: LocalBase) -> str:
    if base.builds_python:
        runtime = " ".join(base.release.python_runtime)
        return _CPYTHON_RECIPE.format(apt=_APT, deps=_BUILD_DEPS, runtime=runtime, v=base.python)
    return _SYSTEM_PYTHON_RECIPE.format(apt=_APT)


def _python_digest(base: LocalBase) -> str:
    return _digest("python", base.suite, base.python or "", _os_digest(base.release), _python_recipe(base))


def ensure_base_image(engine: ContainerEngine, base: LocalBase) -> str:
    """The local base image ``base``, made now unless an image of the same recipe exists; its reference."""
    os_ref = ensure_os_image(engine, base.suite)
    if base.python is None:
        return os_ref
    digest = _python_digest(base)
    if _label(engine, base.ref, RECIPE_LABEL) == digest:
        return base.ref
    with locked(f"python-{base.python}-{base.suite}"):
        if _label(engine, base.ref, RECIPE_LABEL) == digest:
            return base.ref
        log = cache_dir() / f"python-{base.python}-{base.suite}.log"
        log.write_bytes(b"")
        with tempfile.TemporaryDirectory(prefix="hermes-python-", dir="/var/tmp") as tmp:
            context = Path(tmp)
            if base.builds_python:
                shutil.copyfile(cpython_source(base.python or ""), context / "python.tar.xz")
            (context / "Dockerfile").write_text(_python_recipe(base))
            _build(
                engine, context, base.ref, labels={RECIPE_LABEL: digest}, args={"HERMES_OS": os_ref}, target=None,
                log=log,
            )  # fmt: skip
    return base.ref


def relocatable_dir(version: str) -> Path:
    return cache_dir().parent / "python" / f"{version}-{TOOLBOX_SUITE}"


def ensure_relocatable_python(engine: ContainerEngine, version: str) -> Path:
    """A Python ``version`` that runs from any directory in any image with glibc 2.36 or newer, built from source
    on bookworm once (the release's own Python is not relocatable); the directory holding ``bin/python<version>``.
    The build shares its cached layers with ``hermes_env/python:<version>-bookworm``."""
    base = LocalBase(TOOLBOX_SUITE, version)
    runtime = " ".join(base.release.python_runtime)
    recipe = _CPYTHON_RECIPE.format(apt=_APT, deps=_BUILD_DEPS, runtime=runtime, v=version)
    digest = _digest("relocatable", version, _os_digest(base.release), recipe)
    target = relocatable_dir(version)
    marker = target / ".recipe"
    if marker.is_file() and marker.read_text() == digest:
        return target
    os_ref = ensure_os_image(engine, TOOLBOX_SUITE)
    with locked(f"relocatable-{version}"):
        if marker.is_file() and marker.read_text() == digest:
            return target
        log = cache_dir() / f"python-relocatable-{version}.log"
        log.write_bytes(b"")
        tag = f"hermes_env/python-relocatable:{version}-{TOOLBOX_SUITE}"
        with tempfile.TemporaryDirectory(prefix="hermes-python-", dir="/var/tmp") as tmp:
            context = Path(tmp)
            shutil.copyfile(cpython_source(version), context / "python.tar.xz")
            (context / "Dockerfile").write_text(recipe)
            _build(
                engine, context, tag, labels={RECIPE_LABEL: digest}, args={"HERMES_OS": os_ref},
                target="relocatable", log=log,
            )  # fmt: skip
        staging = target.with_name(target.name + ".part")
        shutil.rmtree(staging, ignore_errors=True)
        staging.parent.mkdir(parents=True, exist_ok=True)
        created = engine.run_sync("create", "--label", f"{LABEL}=export", tag, "/bin/true", timeout=120)
        cid = created.text.strip().splitlines()[-1]
        try:
            engine.run_sync("cp", f"{cid}:/opt/python", str(staging), timeout=600)
        finally:
            engine.run_sync("rm", "-f", cid, check=False, timeout=120)
        (staging / ".recipe").write_text(digest)
        shutil.rmtree(target, ignore_errors=True)
        staging.replace(target)
    return target


# -- uv (astral's ghcr.io/astral-sh/uv images hold /uv and /uvx; PyPI's uv wheel holds the same binaries) ---------


@dataclass(frozen=True, slots=True)
class UvImage:
    """A stand-in for ``ghcr.io/astral-sh/uv:<version>``: ``/uv`` and ``/uvx`` from PyPI's ``uv`` wheel."""

    version: str

    def __post_init__(self) -> None:
        if not re.fullmatch(r"\d+\.\d+\.\d+", self.version):
            raise ValueError(f"a uv version looks like 0.9.5, got {self.version!r}")

    @property
    def ref(self) -> str:
        return f"hermes_env/uv:{self.version}"

    def describe(self) -> str:
        return f"uv {self.version} from PyPI"


def uv_binaries(version: str) -> Path:
    """A directory holding ``uv`` and ``uvx`` of ``version``, from PyPI's manylinux x86-64 wheel (cached)."""
    import sys
    import zipfile

    target = cache_dir().parent / "uv" / version
    if (target / "uv").is_file() and (target / "uvx").is_file():
        return target
    with tempfile.TemporaryDirectory(prefix="hermes-uv-") as tmp:
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--dest", tmp,
             "--platform", "manylinux_2_17_x86_64", "--platform", "manylinux2014_x86_64", f"uv=={version}"],
            capture_output=True, text=True, timeout=900, check=False,
        )  # fmt: skip
        wheels = list(Path(tmp).glob("uv-*.whl"))
        if proc.returncode != 0 or not wheels:
            raise UvUnavailableError(f"uv {version}'s wheel is not available from PyPI: {proc.stderr[-500:]}")
        staging = target.with_name(version + ".part")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        with zipfile.ZipFile(wheels[0]) as wheel:
            for name in ("uv", "uvx"):
                member = next((m for m in wheel.namelist() if m.endswith(f".data/scripts/{name}")), None)
                if member is None:
                    raise UvUnavailableError(f"uv {version}'s wheel has no {name} binary")
                (staging / name).write_bytes(wheel.read(member))
                (staging / name).chmod(0o755)
        shutil.rmtree(target, ignore_errors=True)
        staging.replace(target)
    return target


def ensure_uv_image(engine: ContainerEngine, uv: UvImage) -> str:
    """``hermes_env/uv:<version>`` (``/uv``, ``/uvx``), made once; its reference."""
    digest = _digest("uv", uv.version)
    if _label(engine, uv.ref, RECIPE_LABEL) == digest:
        return uv.ref
    binaries = uv_binaries(uv.version)
    with locked(f"uv-{uv.version}"), tempfile.TemporaryDirectory(prefix="hermes-uv-", dir="/var/tmp") as tmp:
        context = Path(tmp)
        for name in ("uv", "uvx"):
            shutil.copy2(binaries / name, context / name)
        (context / "Dockerfile").write_text("FROM scratch\nCOPY uv uvx /\n")
        log = cache_dir() / f"uv-{uv.version}.log"
        log.write_bytes(b"")
        _build(engine, context, uv.ref, labels={RECIPE_LABEL: digest}, args={}, target=None, log=log)
    return uv.ref
