"""Per-task images: which item fields name one, the content hash that keys the cache, building once, bad recipes."""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path

import pytest
from hermes_env.containers import ContainerEngine, ImageCache, ImageSpec, recipes
from hermes_env.containers.images import TASK_REPOSITORY, recipe_hash, remove_images
from hermes_env.containers.recipes import CONTENT_LABEL
from hermes_env.errors import ImageBuildError, ImageUnavailableError
from hypothesis import given, settings
from hypothesis import strategies as st

RECIPE = "ARG HERMES_BASE_IMAGE\nFROM ${HERMES_BASE_IMAGE}\nCOPY note.txt /etc/hermes-note\n"


def _write_tree(root: Path, files: dict[str, bytes], executable: frozenset[str] = frozenset()) -> None:
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        if rel in executable:
            path.chmod(0o755)


names = st.lists(st.sampled_from(["a", "b", "sub", "x.txt", "Dockerfile.d"]), min_size=1, max_size=3).map("/".join)
contexts = st.dictionaries(names.filter(lambda n: n != "Dockerfile"), st.binary(max_size=40), max_size=5).filter(
    # a path cannot be both a file and a directory of the same tree
    lambda files: not any(other.startswith(name + "/") for name in files for other in files)
)


@settings(max_examples=60)  # each example writes two trees; 60 cover names, nesting, empty files and bases
@given(files=contexts, base=st.sampled_from([None, "sha256:aa", "sha256:bb"]))
def test_recipe_hash_is_a_function_of_the_contents(files: dict[str, bytes], base: str | None) -> None:
    with tempfile.TemporaryDirectory() as one, tempfile.TemporaryDirectory() as two:
        # The same tree written in opposite orders, in different places, hashes the same.
        _write_tree(Path(one), {"Dockerfile": b"FROM x\n", **files})
        _write_tree(Path(two), dict(reversed(list({"Dockerfile": b"FROM x\n", **files}.items()))))
        first = recipe_hash(Path(one) / "Dockerfile", base)
        assert first == recipe_hash(Path(two) / "Dockerfile", base)
        # Any change of a byte, a name, the executable bit or the base image changes it.
        assert first != recipe_hash(Path(one) / "Dockerfile", (base or "") + "x")
        _write_tree(Path(two), {"Dockerfile": b"FROM y\n"})
        assert first != recipe_hash(Path(two) / "Dockerfile", base)
        _write_tree(Path(two), {"Dockerfile": b"FROM x\n"})
        for rel in files:
            os.chmod(Path(two) / rel, 0o755)
            assert first != recipe_hash(Path(two) / "Dockerfile", base)
            os.chmod(Path(two) / rel, 0o644)
            (Path(two) / rel).write_bytes(files[rel] + b"!")
            assert first != recipe_hash(Path(two) / "Dockerfile", base)
            (Path(two) / rel).write_bytes(files[rel])
        _write_tree(Path(two), {"added-later": b""})
        assert first != recipe_hash(Path(two) / "Dockerfile", base)


def test_item_fields_name_an_image_or_a_recipe(tmp_path: Path) -> None:
    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "Dockerfile").write_text(RECIPE)
    assert ImageSpec.from_item({"id": "t"}, tmp_path) is None
    assert ImageSpec.from_item("not a mapping", tmp_path) is None
    assert ImageSpec.from_item({"image": " alpine:3 "}, tmp_path) == ImageSpec(image="alpine:3")
    spec = ImageSpec.from_item({"dockerfile": "img/Dockerfile"}, tmp_path)
    assert spec is not None and spec.dockerfile == tmp_path / "img" / "Dockerfile" and spec.context == tmp_path / "img"
    for item, message in [
        ({"id": "t", "image": "a", "dockerfile": "img/Dockerfile"}, "names both image and dockerfile"),
        ({"id": "t", "image": ""}, "image must be a non-empty image name"),
        ({"id": "t", "dockerfile": 3}, "dockerfile must be a path"),
        ({"id": "t", "dockerfile": "nope/Dockerfile"}, "does not exist"),
    ]:
        with pytest.raises(ValueError, match=message):
            ImageSpec.from_item(item, tmp_path)


async def test_a_recipe_is_built_once_and_reused(
    engine: ContainerEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "Dockerfile").write_text(RECIPE)
    (tmp_path / "note.txt").write_text(f"built for {tmp_path}\n")  # unique content: a fresh image
    spec = ImageSpec(dockerfile=tmp_path / "Dockerfile")
    cache = ImageCache(engine)
    builds = 0
    real_build = recipes._build

    async def counting_build(*args: object, **kwargs: object) -> None:
        nonlocal builds
        builds += 1
        await real_build(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(recipes, "_build", counting_build)
    try:
        refs = await asyncio.gather(*(cache.resolve(spec) for _ in range(4)))
        assert builds == 1 and len(set(refs)) == 1 and refs[0].startswith(TASK_REPOSITORY + ":")
        labels = engine.run_sync("image", "inspect", "--format", "{{json .Labels}}", refs[0]).text
        assert '"hermes_env":"task"' in labels and CONTENT_LABEL in labels
        # A new cache (another run) finds the image by its content and builds nothing.
        again = ImageCache(engine)
        assert await again.resolve(ImageSpec(dockerfile=tmp_path / "Dockerfile")) == refs[0]
        assert builds == 1
        # An edit is a new image.
        (tmp_path / "note.txt").write_text("edited\n")
        edited = await ImageCache(engine).resolve(ImageSpec(dockerfile=tmp_path / "Dockerfile"))
        assert edited != refs[0]
    finally:
        await remove_images(engine, *refs[:1], *([edited] if "edited" in locals() else []))


async def test_a_recipe_that_fails_to_build_is_a_clear_error_once(
    engine: ContainerEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "Dockerfile").write_text(
        "ARG HERMES_BASE_IMAGE\nFROM ${HERMES_BASE_IMAGE}\nRUN echo 'about to fail' && exit 3\n"
    )
    cache = ImageCache(engine)
    spec = ImageSpec(dockerfile=tmp_path / "Dockerfile")
    with pytest.raises(ImageBuildError) as info:
        await cache.resolve(spec)
    message = str(info.value)
    assert str(tmp_path / "Dockerfile") in message and "fix the Dockerfile" in message and "about to fail" in message
    # Every later rollout of the run gets the same error at once, without building again.
    monkeypatch.setattr(recipes, "_build", None)
    with pytest.raises(ImageBuildError) as again:
        await cache.resolve(ImageSpec(dockerfile=tmp_path / "Dockerfile"))
    assert again.value is info.value
    # Nothing of the failed build is left: no image under its content's tag, no build container.
    digest = recipe_hash(tmp_path / "Dockerfile", await cache.base())
    assert engine.image_id_sync(f"{TASK_REPOSITORY}:{digest[:24]}") is None
    if engine.kind == "podman":  # podman lists the build's working containers with --external
        assert "about to fail" not in engine.run_sync("ps", "-a", "--external", "--no-trunc").text


async def test_a_named_image_that_does_not_exist_is_a_clear_error(engine: ContainerEngine) -> None:
    with pytest.raises(ImageUnavailableError, match="'hermes_env/no-such-image:1'.*pulling it failed"):
        await ImageCache(engine).resolve(ImageSpec(image="hermes_env/no-such-image:1"))


async def test_a_named_local_image_is_used_as_is(engine: ContainerEngine) -> None:
    from hermes_env.containers import BASE_IMAGE

    assert await ImageCache(engine).resolve(ImageSpec(image=BASE_IMAGE)) == BASE_IMAGE
    assert await ImageCache(engine).resolve(None) == engine.image_id_sync(BASE_IMAGE)


async def test_a_recipe_from_upstream_images_is_built_on_their_local_stand_ins(
    engine: ContainerEngine, tmp_path: Path
) -> None:
    # debian:bookworm-slim cannot be pulled here: the image map's local Debian 12 stands in, as for Harbor tasks.
    from hermes_env.containers.upstream_images import UpstreamImageBuilder, is_upstream_recipe

    (tmp_path / "Dockerfile").write_text("FROM debian:bookworm-slim\nCOPY note.txt /etc/hermes-note\n")
    (tmp_path / "note.txt").write_text(f"built for {tmp_path}\n")
    assert is_upstream_recipe(tmp_path / "Dockerfile")
    assert not is_upstream_recipe(Path(__file__).parent / "missing" / "Dockerfile")
    (tmp_path / "other").mkdir()
    for recipe in (RECIPE, "FROM alpine:3.20\n", "FROM scratch\n"):
        (tmp_path / "other" / "Dockerfile").write_text(recipe)
        assert not is_upstream_recipe(tmp_path / "other" / "Dockerfile"), recipe
    cache = ImageCache(engine)
    ref = await cache.resolve(ImageSpec(dockerfile=tmp_path / "Dockerfile"))
    try:
        assert ref == await UpstreamImageBuilder(engine).build(tmp_path)  # one implementation, one cached image
        shown = engine.run_sync("run", "--rm", ref, "cat", "/etc/os-release", "/etc/hermes-note").text
        assert 'VERSION_ID="12"' in shown and f"built for {tmp_path}" in shown
    finally:
        await remove_images(engine, ref)
