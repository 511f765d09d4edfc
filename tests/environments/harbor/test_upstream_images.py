"""The image map and the rewriting of upstream Dockerfiles onto local bases (no engine needed)."""

from __future__ import annotations

import pytest
from hermes_env.containers.local_bases import LocalBase, UvImage
from hermes_env.containers.upstream_images import ImageMap, rewrite_dockerfile, with_packages
from hypothesis import given
from hypothesis import strategies as st


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("python:3.13-slim-bookworm", LocalBase("bookworm", "3.13")),
        ("docker.io/library/python:3.11-slim-bookworm", LocalBase("bookworm", "3.11")),
        ("python:3.12.4-bookworm", LocalBase("bookworm", "3.12")),
        ("python:3.13-slim", LocalBase("trixie", "3.13")),
        ("python:3.10-slim-trixie", LocalBase("trixie", "3.10")),
        ("debian:bookworm-slim", LocalBase("bookworm")),
        ("debian:12.7", LocalBase("bookworm")),
        ("debian:trixie", LocalBase("trixie")),
        ("ubuntu:24.04", LocalBase("noble")),
        ("library/ubuntu:noble-20240801", LocalBase("noble")),
        ("ubuntu@sha256:" + "a" * 64, LocalBase("noble")),
        ("ghcr.io/astral-sh/uv:0.9.5", UvImage("0.9.5")),
        ("ghcr.io/astral-sh/uv:latest", None),
        ("ghcr.io/someone/tool:1", None),
        ("ubuntu:22.04", None),
        ("alpine:3.20", None),
    ],
)
def test_default_map(name: str, expected: LocalBase | UvImage | None) -> None:
    assert ImageMap().lookup(name) == expected


def test_user_entries_come_first_and_are_checked() -> None:
    image_map = ImageMap(entries={"ubuntu:22.04": "ubuntu:noble", "ghcr.io/someone/*": "image:my/tool:1",
                                  "python:3.13-slim": "python:3.13-bookworm"})  # fmt: skip
    assert image_map.lookup("ubuntu:22.04") == LocalBase("noble")
    assert image_map.lookup("ghcr.io/someone/tool:1") == "my/tool:1"
    assert image_map.lookup("python:3.13-slim") == LocalBase("bookworm", "3.13")
    with pytest.raises(ValueError, match="neither a local base"):
        ImageMap(entries={"x": "fedora:40"})


def test_rewrite_from_stages_args_and_copy_from() -> None:
    text = (
        "# syntax=docker/dockerfile:1\n"
        "ARG PY=3.13\n"
        "FROM --platform=linux/amd64 python:${PY}-slim-bookworm AS build\n"
        "RUN pip install \\\n    requests\n"
        "FROM ubuntu:24.04\n"
        "COPY --from=build /usr/local /opt/py\n"
        "COPY --from=debian:bookworm-slim /etc/os-release /tmp/os\n"
        "USER app\n"
    )
    recipe = rewrite_dockerfile(text, ImageMap())
    lines = recipe.text.splitlines()
    assert lines[2] == "FROM --platform=linux/amd64 hermes_env/python:3.13-bookworm AS build"
    assert "FROM hermes_env/os:noble" in lines
    assert "COPY --from=build /usr/local /opt/py" in lines
    assert "COPY --from=hermes_env/os:bookworm /etc/os-release /tmp/os" in lines
    assert recipe.final_user == "app"
    assert set(recipe.bases.values()) == {LocalBase("bookworm", "3.13"), LocalBase("noble"), LocalBase("bookworm")}
    extended = with_packages(recipe, ["curl"])
    assert extended.endswith("USER root\nRUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y "
                             "-qq --no-install-recommends curl >/dev/null\nUSER app\n")  # fmt: skip


def test_unmappable_images_fail_with_what_to_do() -> None:
    with pytest.raises(ValueError, match=r"the base image 'alpine:3\.20' .* add an entry"):
        rewrite_dockerfile("FROM alpine:3.20\n", ImageMap())
    with pytest.raises(ValueError, match="COPY --from image 'ghcr.io/astral-sh/uv:latest'"):
        rewrite_dockerfile("FROM debian:bookworm\nCOPY --from=ghcr.io/astral-sh/uv:latest /uv /bin/\n", ImageMap())
    with pytest.raises(ValueError, match="has no FROM line"):
        rewrite_dockerfile("RUN true\n", ImageMap())
    with pytest.raises(ValueError, match="not a Debian package name"):
        with_packages(rewrite_dockerfile("FROM debian:12\n", ImageMap()), ["curl; rm -rf /"])


@given(minor=st.integers(8, 14), patch=st.none() | st.integers(0, 20), slim=st.booleans(),
       suite=st.sampled_from([None, "bookworm", "trixie"]))  # fmt: skip
def test_python_tags_keep_version_and_release(minor: int, patch: int | None, slim: bool, suite: str | None) -> None:
    tag = f"python:3.{minor}{'' if patch is None else f'.{patch}'}{'-slim' if slim else ''}"
    tag += f"-{suite}" if suite else ""
    assert ImageMap().lookup(tag) == LocalBase(suite or "trixie", f"3.{minor}")
