"""Set-up of the container engine: the base image, and an engine configuration that works on this machine.

``python -m hermes_env.containers setup`` (run by ``scripts/setup.sh``) is idempotent and quiet: with the base
image present and containers starting, it only checks (about a second) and prints nothing.

1. The base image ``hermes_env/base:bookworm``: Debian bookworm (``debootstrap --variant=minbase`` as root,
   imported with ``<engine> import``; about two minutes) with the tools the shipped tasks use. Without root or
   debootstrap it is built from ``debian:bookworm-slim``, which needs a reachable registry.
2. A probe container started the way the ``docker`` backend starts them (limits, no network, an init). When the
   engine's defaults fail it, set-up tries each installed OCI runtime with this process's ulimits and writes the
   first that works to podman's configuration (:mod:`hermes_env.containers.config`).
3. Containers left by runs that were killed (SIGKILL) are removed.
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from hermes_env.containers.config import podman_conf_path, write_podman_conf
from hermes_env.containers.engine import LABEL, ContainerEngine, detect_engine, make_engine, sweep_leftovers
from hermes_env.containers.recipes import BASE_IMAGE
from hermes_env.errors import ContainerError, EngineUnavailableError

SUITE = "bookworm"
#: What tasks without an image of their own may use (beyond Debian's minbase: coreutils, sed, grep, mawk, tar,
#: gzip, findutils, util-linux, perl-base, apt).
BASE_PACKAGES = ("python3", "bc", "patch", "zip", "unzip", "git", "procps", "ca-certificates", "tmux")
MIRROR_ENV = "HERMES_DEBIAN_MIRROR"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
ENV_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#: How the docker backend starts containers, minus its workspace and command (the probe must pass the same way).
PROBE_RUN_ARGS = ("--init", "--network", "none", "--memory", "64m", "--pids-limit", "32", "--cpus", "0.5")


def _say(quiet: bool, message: str) -> None:
    if not quiet:
        print(f"containers: {message}", file=sys.stderr, flush=True)


# -- base image -------------------------------------------------------------------------------------------------------


def import_rootfs(engine: ContainerEngine, rootfs: Path, ref: str, *, changes: tuple[str, ...] = ()) -> None:
    """Import a root filesystem directory as the image ``ref`` (labelled ``hermes_env=base``), with ``changes``
    (Dockerfile instructions such as ``ENV`` or ``LABEL``) applied after the defaults."""
    all_changes = [
        f"LABEL {LABEL}=base",
        f"ENV PATH={ENV_PATH}",
        "ENV LANG=C.UTF-8",
        'CMD ["/bin/bash"]',
        *changes,
    ]
    args = ["import"]
    for change in all_changes:
        args += ["--change", change]
    args += ["-", ref]
    tar = subprocess.Popen(["tar", "--numeric-owner", "-C", str(rootfs), "-cf", "-", "."], stdout=subprocess.PIPE)
    try:
        imported = subprocess.run(
            engine.argv(*args), stdin=tar.stdout, capture_output=True, env=dict(engine.env), timeout=900, check=False
        )
    finally:
        assert tar.stdout is not None
        tar.stdout.close()
        tar.wait()
    if imported.returncode != 0 or tar.returncode != 0:
        raise EngineUnavailableError(
            f"importing the image {ref} failed (tar exit {tar.returncode}, {engine.name} import exit "
            f"{imported.returncode}): {imported.stderr.decode(errors='replace')[-800:]}"
        )


def debootstrap_image(
    engine: ContainerEngine,
    ref: str,
    *,
    suite: str,
    mirror: str,
    packages: tuple[str, ...],
    sources_line: str,
    script: str | None = None,
    check_gpg: bool = True,
    prepare: Callable[[Path], None] | None = None,
    changes: tuple[str, ...] = (),
) -> None:
    """``debootstrap --variant=minbase`` of ``suite`` from ``mirror`` (with ``script``, debootstrap's script for
    a suite it does not know by name), then imported as ``ref``. ``prepare`` may add files to the root
    filesystem before the import; ``sources_line`` becomes its ``/etc/apt/sources.list``."""
    work = Path(tempfile.mkdtemp(prefix="hermes-base-", dir="/var/tmp"))
    rootfs = work / "rootfs"
    log = work / "debootstrap.log"
    argv = ["debootstrap", "--variant=minbase"]
    if packages:
        argv.append(f"--include={','.join(packages)}")
    if not check_gpg:
        argv.append("--no-check-gpg")
    argv += [suite, str(rootfs), mirror]
    if script is not None:
        argv.append(script)
    try:
        with log.open("wb") as out:
            proc = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, timeout=1800, check=False)
        if proc.returncode != 0:
            raise EngineUnavailableError(
                f"debootstrap {suite} from {mirror} failed (exit {proc.returncode}); set ${MIRROR_ENV} to a "
                f"reachable mirror. Its log ends with:\n{log.read_text(errors='replace')[-1500:]}"
            )
        # Downloaded packages are not needed in the image; the package lists are kept so task images build
        # without downloading them again (their recipes still run apt-get update, which is then quick).
        for deb in (rootfs / "var/cache/apt/archives").glob("*.deb"):
            deb.unlink()
        (rootfs / "etc/apt/sources.list").write_text(sources_line + "\n")
        if prepare is not None:
            prepare(rootfs)
        import_rootfs(engine, rootfs, ref, changes=changes)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _debootstrap(engine: ContainerEngine, ref: str, mirror: str, quiet: bool) -> None:
    debootstrap_image(
        engine, ref, suite=SUITE, mirror=mirror, packages=BASE_PACKAGES, sources_line=f"deb {mirror} {SUITE} main"
    )


def _from_registry(engine: ContainerEngine, ref: str) -> None:
    recipe = (
        f"FROM docker.io/library/debian:{SUITE}-slim\n"
        "RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "
        f"{' '.join(BASE_PACKAGES)} >/dev/null\n"
        f"ENV LANG=C.UTF-8\n"
    )
    with tempfile.TemporaryDirectory(prefix="hermes-base-") as ctx:
        (Path(ctx) / "Dockerfile").write_text(recipe)
        result = engine.run_sync("build", "-q", "--label", f"{LABEL}=base", "-t", ref, ctx, timeout=1800, check=False)
    if result.returncode != 0:
        raise EngineUnavailableError(
            f"building the base image from debian:{SUITE}-slim failed (this route needs a reachable registry; as "
            f"root with debootstrap installed set-up needs none): {result.err[-1500:]}"
        )


def ensure_base_image(engine: ContainerEngine, *, ref: str = BASE_IMAGE, quiet: bool = False) -> bool:
    """Make the base image unless it exists; True when it was made now."""
    if engine.image_id_sync(ref) is not None:
        return False
    started = time.monotonic()
    if os.geteuid() == 0 and shutil.which("debootstrap"):
        mirror = os.environ.get(MIRROR_ENV, DEFAULT_MIRROR)
        _say(quiet, f"making the base image {ref} (debootstrap {SUITE} from {mirror}; about two minutes)")
        _debootstrap(engine, ref, mirror, quiet)
    else:
        _say(quiet, f"making the base image {ref} from debian:{SUITE}-slim (no root or no debootstrap here)")
        _from_registry(engine, ref)
    _say(quiet, f"made {ref} in {time.monotonic() - started:.0f}s")
    return True


# -- engine configuration ---------------------------------------------------------------------------------------------


def probe_container(engine: ContainerEngine, image: str = BASE_IMAGE) -> str | None:
    """None when a container starts here the way the docker backend starts them, else the engine's error."""
    result = engine.run_sync(
        "run", "--rm", "--label", f"{LABEL}=probe", *PROBE_RUN_ARGS, "--entrypoint", "/bin/true", image,
        timeout=120, check=False,
    )  # fmt: skip
    if result.returncode == 0:
        return None
    return result.err or result.text or f"exit {result.returncode}"


def _current_ulimits() -> dict[str, tuple[int, int]]:
    out = {}
    for name, which in (("nofile", resource.RLIMIT_NOFILE), ("nproc", resource.RLIMIT_NPROC)):
        soft, hard = resource.getrlimit(which)
        cap = 1 << 20
        hard = cap if hard == resource.RLIM_INFINITY else min(hard, cap)
        soft = hard if soft == resource.RLIM_INFINITY else min(soft, hard)
        out[name] = (soft, hard)
    return out


_RLIMIT_NAMES = {"6": "nproc", "7": "nofile"}  # RLIMIT_NPROC, RLIMIT_NOFILE as runc reports them
_RLIMIT_FLOOR = 1024


def _lowered(ulimits: dict[str, tuple[int, int]], error: str) -> dict[str, tuple[int, int]] | None:
    """The ulimits with the one runc could not set halved, or None when the error is another one (or at the floor)."""
    match = re.search(r"rlimit type (\d+)", error)
    name = _RLIMIT_NAMES.get(match.group(1)) if match else None
    if name is None or ulimits[name][1] <= _RLIMIT_FLOOR:
        return None
    hard = max(_RLIMIT_FLOOR, ulimits[name][1] // 2)
    return {**ulimits, name: (min(ulimits[name][0], hard), hard)}


def ensure_engine_config(engine: ContainerEngine, *, quiet: bool = False) -> ContainerEngine:
    """An engine whose containers start; writes podman's configuration when its defaults fail here."""
    problem = probe_container(engine)
    if problem is None:
        return engine
    if engine.kind != "podman":
        raise EngineUnavailableError(
            f"docker cannot start a container here: {problem}. Set the daemon's default-runtime / default-ulimits "
            "in /etc/docker/daemon.json, restart it, and run set-up again"
        )
    tried = [f"the defaults: {problem}"]
    for runtime in ("runc", "crun"):
        if shutil.which(runtime) is None:
            continue
        ulimits = _current_ulimits()
        while True:
            path = write_podman_conf(runtime, ulimits)
            detect_engine.cache_clear()  # engines made before carry the environment without this file
            candidate = make_engine(engine.program)
            again = probe_container(candidate)
            if again is None:
                limits = ", ".join(f"{k}={s}:{h}" for k, (s, h) in sorted(ulimits.items()))
                _say(quiet, f"podman's defaults fail here; wrote {path} (runtime {runtime}, ulimits {limits})")
                return candidate
            # The runtime may be allowed less than this process has (seen: nproc 96551 refused, 32768 taken).
            lowered = _lowered(ulimits, again)
            if lowered is None:
                tried.append(f"runtime {runtime} with ulimits {ulimits}: {again}")
                break
            ulimits = lowered
    podman_conf_path().unlink(missing_ok=True)
    detect_engine.cache_clear()
    raise EngineUnavailableError("podman cannot start a container here. Tried " + "; ".join(tried))


def readiness_problem(engine_name: str | None = None) -> str | None:
    """Why the docker backend and the container launcher cannot run here (no engine, no base image), or None."""
    try:
        engine = detect_engine(engine_name)
    except ContainerError as exc:
        return str(exc)
    if engine.image_id_sync(BASE_IMAGE) is None:
        return f"the base image {BASE_IMAGE} is missing; run `bash scripts/setup.sh`"
    return None


def setup(engine_name: str | None = None, *, quiet: bool = False) -> ContainerEngine:
    """Everything above; returns the configured engine."""
    engine = detect_engine(engine_name)
    ensure_base_image(engine, quiet=quiet)
    engine = ensure_engine_config(engine, quiet=quiet)
    swept = sweep_leftovers(engine)
    if swept:
        _say(quiet, f"removed {len(swept)} container(s) left by runs that were killed")
    return engine
