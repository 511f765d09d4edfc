"""Images from upstream Dockerfiles (Harbor / Terminal-Bench task environments) on a machine without a registry.

An upstream Dockerfile starts ``FROM python:3.13-slim-bookworm`` or ``FROM ubuntu:24.04``. The :class:`ImageMap`
maps such names to local bases (:mod:`hermes_env.containers.local_bases`), made from the distribution mirrors;
:func:`build_environment_image` rewrites the ``FROM`` lines (and ``COPY --from=<image>``) of a copy of the
Dockerfile to them, and builds it with the task's own directory as context: the task's files are never edited.

The default map (``DEFAULT_IMAGE_MAP`` and two rules; first match wins, ``*`` matches anything):

- ``debian:bookworm*``, ``debian:12*`` -> ``debian:bookworm`` (``hermes_env/os:bookworm``);
- ``debian:trixie*``, ``debian:13*``, ``debian:stable*``, ``debian:latest``, ``debian`` -> ``debian:trixie``;
- ``ubuntu:24.04*``, ``ubuntu:noble*``, ``ubuntu:latest``, ``ubuntu`` -> ``ubuntu:noble``;
- ``python:3.X[.Y][-slim|-full][-bookworm|-trixie]`` -> ``python:3.X-<release>``, the release the tag names, else
  trixie (the official tags' default release since August 2025);
- ``ghcr.io/astral-sh/uv:X.Y.Z`` (``COPY --from=`` it) -> ``uv:X.Y.Z``: ``/uv`` and ``/uvx`` from PyPI's ``uv`` wheel.

A ``docker.io/`` or ``library/`` prefix is ignored. User entries (``pattern = target``) come first; a target is a
local base (``debian:<suite>``, ``ubuntu:<suite>``, ``python:<X.Y>-<suite>``, ``uv:<X.Y.Z>``) or ``image:<ref>``, an
image the engine already has, used as is (its CA set-up is then its own).

Builds are cached by content: the tag ``hermes_env/task:<hash>`` covers the rewritten Dockerfile, every file of the
context and the ids of the base images, so an unchanged task is never rebuilt. At most ``max_parallel`` builds
run at once in a process (and one per recipe across processes); nothing here removes an image, so a build never
loses layers it shares with another.
"""

from __future__ import annotations

import asyncio
import fnmatch
import hashlib
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, Field, field_validator

from hermes_env.containers.engine import ContainerEngine, detect_engine
from hermes_env.containers.local_bases import RELEASES, LocalBase, UvImage, ensure_base_image, ensure_uv_image
from hermes_env.containers.recipes import build_recipe, cache_dir, context_files
from hermes_env.errors import ImageBuildError

DEFAULT_IMAGE_MAP: dict[str, str] = {
    "debian:bookworm*": "debian:bookworm",
    "debian:12*": "debian:bookworm",
    "debian:trixie*": "debian:trixie",
    "debian:13*": "debian:trixie",
    "debian:stable*": "debian:trixie",
    "debian:latest": "debian:trixie",
    "debian": "debian:trixie",
    "ubuntu:24.04*": "ubuntu:noble",
    "ubuntu:noble*": "ubuntu:noble",
    "ubuntu:latest": "ubuntu:noble",
    "ubuntu": "ubuntu:noble",
}
#: The release of a ``python:3.X`` tag that names none (the official images' default).
DEFAULT_PYTHON_SUITE = "trixie"
_UV_TAG = re.compile(r"ghcr\.io/astral-sh/uv:(\d+\.\d+\.\d+)")
_PYTHON_TAG = re.compile(r"python:(3\.\d{1,2})(?:\.\d+)?(?:-(?:slim|full))?(?:-(bookworm|trixie))?")
_HASH_VERSION = b"hermes_env upstream image v2\0"
TASK_REPOSITORY = "hermes_env/task"


def normalize_image_name(name: str) -> str:
    """``docker.io/library/python:3.13`` -> ``python:3.13``; a digest (``@sha256:...``) is dropped."""
    name = name.split("@", 1)[0]
    for prefix in ("docker.io/", "index.docker.io/", "registry-1.docker.io/"):
        if name.startswith(prefix):
            name = name[len(prefix) :]
    if name.startswith("library/"):
        name = name[len("library/") :]
    return name


Target = LocalBase | UvImage | str


def parse_target(target: str) -> Target:
    """A map target: a :class:`LocalBase`, a :class:`UvImage` (``uv:<version>``), or an image reference
    (``image:<ref>``) as a string."""
    if target.startswith("image:") and target[len("image:") :].strip():
        return target[len("image:") :].strip()
    if target.startswith("uv:"):
        return UvImage(target[len("uv:") :])
    match = re.fullmatch(r"(debian|ubuntu):([a-z]+)", target)
    if match and match.group(2) in RELEASES and RELEASES[match.group(2)].distro == match.group(1):
        return LocalBase(match.group(2))
    match = re.fullmatch(r"python:(3\.\d{1,2})-([a-z]+)", target)
    if match and match.group(2) in RELEASES:
        return LocalBase(match.group(2), match.group(1))
    known = ", ".join(f"{r.distro}:{s}" for s, r in RELEASES.items())
    raise ValueError(
        f"image map target {target!r} is neither a local base ({known}, python:3.X-<release>), uv:<version> "
        "nor image:<ref>"
    )


class ImageMap(BaseModel):
    """Upstream image names to local bases: the user's ``entries`` first, then :data:`DEFAULT_IMAGE_MAP` and the
    ``python:3.X`` rule."""

    entries: dict[str, str] = Field(default_factory=dict, description="pattern -> target, tried before the defaults")

    @field_validator("entries")
    @classmethod
    def _targets_parse(cls, value: dict[str, str]) -> dict[str, str]:
        for target in value.values():
            parse_target(target)
        return value

    def lookup(self, name: str) -> Target | None:
        """The local base (or image) standing in for ``name``, None when nothing maps it."""
        bare = normalize_image_name(name)
        for pattern, target in self.entries.items():
            if fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(bare, pattern):
                return parse_target(target)
        for pattern, target in DEFAULT_IMAGE_MAP.items():
            if fnmatch.fnmatchcase(bare, pattern):
                return parse_target(target)
        match = _PYTHON_TAG.fullmatch(bare)
        if match:
            return LocalBase(match.group(2) or DEFAULT_PYTHON_SUITE, match.group(1))
        match = _UV_TAG.fullmatch(bare)
        if match:
            return UvImage(match.group(1))
        return None


# -- Dockerfile rewriting ---------------------------------------------------------------------------------------------


@dataclass
class RewrittenRecipe:
    text: str
    #: Upstream name -> what stands in for it.
    bases: dict[str, Target] = field(default_factory=dict)
    #: The last ``USER`` of the final stage (None: root).
    final_user: str | None = None


def _logical_lines(text: str) -> list[str]:
    """The Dockerfile's instructions, continuation lines joined (comments and blank lines kept as they are)."""
    out: list[str] = []
    pending = ""
    for line in text.splitlines():
        if pending and line.lstrip().startswith("#"):
            continue  # comment lines inside a continued instruction are dropped, as the builders do
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        out.append(pending + line)
        pending = ""
    if pending:
        out.append(pending)
    return out


def _substitute(token: str, args: Mapping[str, str]) -> str:
    def repl(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        return args.get(name, m.group(0))

    return re.sub(r"\$\{(\w+)\}|\$(\w+)", repl, token)


def rewrite_dockerfile(text: str, image_map: ImageMap, *, source: str = "Dockerfile") -> RewrittenRecipe:
    """The Dockerfile with upstream images replaced by their local stand-ins (see the module doc).

    ValueError names an image nothing maps (``FROM`` or ``COPY --from``) and says how to map it.
    """
    recipe = RewrittenRecipe(text="")
    global_args: dict[str, str] = {}
    stages: set[str] = set()
    seen_from = False
    lines: list[str] = []

    def stand_in(name: str, what: str) -> str:
        target = image_map.lookup(name)
        if target is None:
            raise ValueError(
                f"{source}: {what} {name!r} comes from a registry this machine cannot reach and the image map has no "
                f"local stand-in for it; add an entry ('{normalize_image_name(name)}' = 'debian:bookworm', or "
                "'image:<a local image>') to the image map"
            )
        recipe.bases[name] = target
        return target if isinstance(target, str) else target.ref

    for line in _logical_lines(text):
        stripped = line.strip()
        word = stripped.split(None, 1)[0].upper() if stripped and not stripped.startswith("#") else ""
        if word == "ARG" and not seen_from:
            for part in shlex.split(stripped[3:]):
                key, _, value = part.partition("=")
                global_args[key] = value
        elif word == "FROM":
            seen_from = True
            recipe.final_user = None
            parts = stripped.split()
            index = 1
            while index < len(parts) and parts[index].startswith("--"):
                index += 1
            if index >= len(parts):
                raise ValueError(f"{source}: a FROM line names no image: {stripped!r}")
            image = _substitute(parts[index], global_args)
            if image.lower() != "scratch" and image not in stages:
                parts[index] = stand_in(image, "the base image")
            if len(parts) > index + 2 and parts[index + 1].upper() == "AS":
                stages.add(parts[index + 2])
            line = " ".join(parts)
        elif word in ("COPY", "ADD") or (word == "RUN" and "--mount=" in stripped):

            def copy_from(m: re.Match[str]) -> str:
                ref = m.group(2)
                if ref in stages or ref.isdigit():
                    return m.group(0)
                return f"{m.group(1)}{stand_in(ref, 'COPY --from image')}"

            line = re.sub(r"(--from=)(\S+)", copy_from, line)
        elif word == "USER":
            recipe.final_user = stripped.split(None, 1)[1] if len(stripped.split(None, 1)) > 1 else None
        lines.append(line)
    if not seen_from:
        raise ValueError(f"{source} has no FROM line; a Dockerfile must name its base image")
    recipe.text = "\n".join(lines) + "\n"
    return recipe


def with_packages(recipe: RewrittenRecipe, packages: Sequence[str]) -> str:
    """The recipe with ``apt-get install`` of ``packages`` as a last layer (as root, then back to its user)."""
    if not packages:
        return recipe.text
    for name in packages:
        if not re.fullmatch(r"[a-z0-9][a-z0-9+.-]*", name):
            raise ValueError(f"{name!r} is not a Debian package name")
    text = recipe.text + "USER root\n"
    text += (
        "RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "
        f"{' '.join(packages)} >/dev/null\n"
    )
    if recipe.final_user:
        text += f"USER {recipe.final_user}\n"
    return text


def is_upstream_recipe(dockerfile: Path, image_map: ImageMap | None = None) -> bool:
    """Whether ``dockerfile`` starts from upstream images that ``image_map`` (None: the default map) stands in for
    locally: every ``FROM`` and ``COPY --from`` image is mapped, and at least one is named."""
    try:
        recipe = rewrite_dockerfile(dockerfile.read_text(errors="replace"), image_map or ImageMap())
    except (OSError, ValueError):
        return False
    return bool(recipe.bases)


# -- building ---------------------------------------------------------------------------------------------------------


def _content_hash(text: str, context: Path, base_ids: Sequence[str]) -> str:
    h = hashlib.sha256(_HASH_VERSION)
    for base_id in base_ids:
        h.update(base_id.encode() + b"\0")
    h.update(text.encode() + b"\0")
    for path in context_files(context):
        data = path.read_bytes()
        h.update(path.relative_to(context).as_posix().encode() + b"\0")
        h.update(len(data).to_bytes(8, "big") + data)
        h.update(b"\1" if os.access(path, os.X_OK) else b"\0")  # COPY keeps the mode
    return h.hexdigest()


class UpstreamImageBuilder:
    """Builds environment directories (a ``Dockerfile`` and its context) into cached images; see the module doc."""

    def __init__(
        self,
        engine: ContainerEngine | None = None,
        *,
        image_map: ImageMap | None = None,
        max_parallel: int = 2,
        build_timeout_s: float = 1800.0,
    ) -> None:
        if max_parallel < 1:
            raise ValueError(f"max_parallel must be at least 1, got {max_parallel}")
        self.engine = engine or detect_engine(None)
        self.image_map = image_map or ImageMap()
        self.build_timeout_s = build_timeout_s
        self._slots = asyncio.Semaphore(max_parallel)
        self._bases: dict[LocalBase | UvImage, asyncio.Future[str]] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def _base(self, base: LocalBase | UvImage) -> str:
        """A local base's image id, made once per process (and per machine: its label is checked)."""
        future = self._bases.get(base)
        if future is None:
            make = ensure_uv_image if isinstance(base, UvImage) else ensure_base_image
            future = asyncio.ensure_future(asyncio.to_thread(make, self.engine, base))  # type: ignore[arg-type]
            self._bases[base] = future
        ref = await asyncio.shield(future)
        image_id = await self.engine.image_id(ref)
        if image_id is None:
            raise ImageBuildError(f"the local base {ref} vanished from {self.engine.name} while in use")
        return image_id

    async def build(
        self,
        environment_dir: Path,
        *,
        extra_packages: Sequence[str] = (),
        timeout_s: float | None = None,
        dockerfile: Path | None = None,
    ) -> str:
        """The tag of ``environment_dir/Dockerfile`` (or ``dockerfile``, with ``environment_dir`` its context) built
        (once per content) on local bases; ``timeout_s`` bounds the build of this recipe (its local bases, made
        once, are not counted)."""
        dockerfile = dockerfile or environment_dir / "Dockerfile"
        if not dockerfile.is_file():
            raise ImageBuildError(f"{environment_dir} has no Dockerfile; a task's environment/ needs one")
        try:
            recipe = rewrite_dockerfile(dockerfile.read_text(errors="replace"), self.image_map, source=str(dockerfile))
            text = with_packages(recipe, extra_packages)
        except ValueError as exc:
            raise ImageBuildError(str(exc)) from None
        base_ids = []
        for target in recipe.bases.values():
            if not isinstance(target, str):
                base_ids.append(await self._base(target))
            else:
                image_id = await self.engine.image_id(target)
                if image_id is None:
                    raise ImageBuildError(f"the image map names {target!r}, which {self.engine.name} does not have")
                base_ids.append(image_id)
        digest = await asyncio.to_thread(_content_hash, text, environment_dir, sorted(base_ids))
        tag = f"{TASK_REPOSITORY}:{digest[:24]}"
        lock = self._locks.setdefault(digest, asyncio.Lock())
        async with lock:
            if await self.engine.image_id(tag) is not None:
                return tag
            recipes = cache_dir() / "recipes"
            recipes.mkdir(parents=True, exist_ok=True)
            rewritten = recipes / f"{digest[:24]}.Dockerfile"
            rewritten.write_text(text)
            async with self._slots:
                try:
                    limit = self.build_timeout_s if timeout_s is None else timeout_s
                    await build_recipe(self.engine, rewritten, environment_dir, tag, digest, timeout_s=limit)
                except ImageBuildError as exc:
                    raise ImageBuildError(f"{dockerfile} (rewritten to {rewritten}): {exc}") from None
        return tag


async def build_environment_image(
    environment_dir: Path | str,
    *,
    engine: ContainerEngine | None = None,
    image_map: ImageMap | None = None,
    extra_packages: Sequence[str] = (),
    timeout_s: float | None = None,
) -> str:
    """Build a Harbor/Terminal-Bench ``environment/`` directory (Dockerfile + context) into a cached local image
    and return its tag; upstream base images are replaced per ``image_map`` (see the module doc)."""
    builder = UpstreamImageBuilder(engine, image_map=image_map)
    return await builder.build(Path(environment_dir), extra_packages=extra_packages, timeout_s=timeout_s)
