"""Path confinement (``hermes_env.isolation.paths``): the one walk every backend's file methods use."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest
from hermes_env.errors import FileTooLargeError, WorkspacePathError
from hermes_env.isolation import paths
from hypothesis import given, settings
from hypothesis import strategies as st

ROOTS = ("/workspace",)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "ws"
    r.mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "victim.txt").write_text("precious")
    return r


@pytest.mark.parametrize(
    ("given", "expected"),
    [("a.txt", "a.txt"), ("/workspace/d/a.txt", "d/a.txt"), ("./d/../a.txt", "a.txt"), ("", "."),
     ("/workspace", "."), ("/workspace/", "."), (" d/a ", "d/a")],
)  # fmt: skip
def test_paths_are_workspace_relative(given: str, expected: str) -> None:
    assert str(paths.workspace_relative(given, ROOTS)) == expected


@pytest.mark.parametrize(
    "bad", ["..", "../outside/victim.txt", "d/../../x", "/workspace/../x", "/workspacefoo/x", "/x"]
)
def test_paths_leaving_the_workspace_are_refused(bad: str) -> None:
    with pytest.raises(WorkspacePathError, match="escapes the workspace|outside the workspace"):
        paths.workspace_relative(bad, ROOTS)


def test_nul_bytes_and_non_strings_are_refused() -> None:
    with pytest.raises(WorkspacePathError, match="NUL"):
        paths.workspace_relative("a\x00b", ROOTS)
    with pytest.raises(TypeError):
        paths.workspace_relative(b"a", ROOTS)  # type: ignore[arg-type]


_SEGMENTS = st.sampled_from(["..", ".", "", "a", "b", "workspace", "/", "//", "etc", "x y", "..."])


@settings(max_examples=300, deadline=None)
@given(st.lists(_SEGMENTS, max_size=8), st.booleans())
def test_workspace_relative_never_leaves_the_root(parts: list[str], absolute: bool) -> None:
    raw = ("/" if absolute else "") + "/".join(parts)
    try:
        rel = paths.workspace_relative(raw, ROOTS)
    except WorkspacePathError:
        return
    assert not rel.is_absolute() and ".." not in rel.parts
    base = Path("/srv/ws")
    assert base in (base / rel).parents or (base / rel) == base


def test_write_creates_parents_replaces_and_round_trips(root: Path) -> None:
    paths.write_bytes(root, "x/y/z.bin", b"\x00\x01")
    assert paths.read_bytes(root, "x/y/z.bin") == b"\x00\x01"
    paths.write_bytes(root, "/workspace/x/y/z.bin", b"short", ROOTS)  # replaced, not appended
    assert paths.read_bytes(root, "x/y/z.bin") == b"short"
    assert paths.list_files(root) == ["x/y/z.bin"]
    assert paths.list_files(root, "x/y/z.bin") == ["x/y/z.bin"]
    with pytest.raises(FileTooLargeError, match="read limit"):
        paths.read_bytes(root, "x/y/z.bin", max_bytes=2)
    with pytest.raises(FileTooLargeError, match="file limit"):
        paths.write_bytes(root, "big", b"x" * 10, max_bytes=5)
    assert not (root / "big").exists()
    with pytest.raises(IsADirectoryError):
        paths.read_bytes(root, "x")
    with pytest.raises(IsADirectoryError):
        paths.write_bytes(root, ".", b"")
    with pytest.raises(FileNotFoundError):
        paths.list_files(root, "missing")


def test_a_fifo_is_not_opened(root: Path) -> None:
    os.mkfifo(root / "pipe")
    with pytest.raises(WorkspacePathError, match="not a regular file"):
        paths.read_bytes(root, "pipe")  # would block forever if opened for reading


def test_parent_swapped_for_a_symlink_after_the_check_is_refused(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outside = root.parent / "outside"
    (root / "d").mkdir()
    checked = paths.resolve_confined(root, "d/victim.txt")
    # A command swaps d for a link to the host between the check and the write.
    (root / "d").rmdir()
    (root / "d").symlink_to(outside)
    monkeypatch.setattr(paths, "resolve_confined", lambda *_: checked)
    with pytest.raises(WorkspacePathError, match="not a plain directory"):
        paths.write_bytes(root, "d/victim.txt", b"pwned")
    with pytest.raises(WorkspacePathError):
        paths.read_bytes(root, "d/victim.txt")
    assert (outside / "victim.txt").read_text() == "precious"


def test_final_component_swapped_for_a_symlink_is_not_written(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outside = root.parent / "outside"
    checked = paths.resolve_confined(root, "f.txt")
    (root / "f.txt").symlink_to(outside / "victim.txt")
    monkeypatch.setattr(paths, "resolve_confined", lambda *_: checked)
    with pytest.raises(WorkspacePathError, match="symlink"):
        paths.write_bytes(root, "f.txt", b"pwned")
    assert (outside / "victim.txt").read_text() == "precious"


def test_listing_and_archiving_never_follow_links(root: Path) -> None:
    (root / "src").mkdir()
    (root / "src" / "a.py").write_text("print(1)")
    (root / "link_out").symlink_to(root.parent / "outside")
    (root / "src" / "alias").symlink_to("a.py")
    assert paths.list_files(root) == ["src/a.py"]
    blob = paths.archive(root, ".")
    with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
        members = {m.name: m for m in tar.getmembers()}
        assert tar.extractfile(members["src/a.py"]).read() == b"print(1)"  # type: ignore[union-attr]
    assert members["link_out"].issym() and members["link_out"].linkname == str(root.parent / "outside")
    assert members["src/alias"].issym()
    assert not any("victim" in name for name in members)
    with pytest.raises(FileTooLargeError):
        paths.archive(root, ".", max_bytes=10)


def test_empty_dir_removes_locked_down_trees(root: Path) -> None:
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "f").write_text("x")
    (root / "a" / "b").chmod(0)
    (root / "link").symlink_to(root.parent / "outside")
    paths.empty_dir(root)
    assert list(root.iterdir()) == [] and (root.parent / "outside" / "victim.txt").exists()


def test_a_tree_that_cannot_be_removed_leaves_its_parent_as_it_was(tmp_path: Path) -> None:
    # A task's workspace that cannot go (a mount point in it, files still being written) must not close the run
    # root that the run's other tasks traverse to reach theirs.
    from hermes_env.isolation import quota
    from hermes_env.isolation.users import SandboxUser

    if quota.quota_problem() is not None:
        pytest.skip(f"needs a directory that cannot be removed (a tmpfs mount point): {quota.quota_problem()}")
    run_root = tmp_path / "run"
    run_root.mkdir()
    run_root.chmod(0o711)
    busy = run_root / "task"
    quota.mount_workspace(busy / "mounted", 1024 * 1024, SandboxUser())
    (busy / "locked").mkdir()
    (busy / "locked" / "f").write_text("x")
    (busy / "locked").chmod(0)
    try:
        paths.force_rmtree(busy)
        assert (busy / "mounted").is_dir() and not (busy / "locked").exists()
        assert run_root.stat().st_mode & 0o777 == 0o711
    finally:
        quota.unmount(busy / "mounted")
    paths.force_rmtree(busy)
    assert not busy.exists() and run_root.stat().st_mode & 0o777 == 0o711


# A workspace holding files and symlinks to anywhere; whatever path a model asks for, the bytes read
# are those of a file inside the workspace, or the read is refused.
_NAMES = st.sampled_from(["a", "b", "c", "..", "."])
_TARGETS = st.sampled_from(["a", "../outside", "../outside/victim.txt", "/", "/etc/hostname", "..", "b/a", "."])


@settings(max_examples=200, deadline=None)
@given(
    links=st.lists(st.tuples(st.sampled_from(["a", "b", "c", "b/l"]), _TARGETS), max_size=4),
    requests=st.lists(st.lists(_NAMES, min_size=1, max_size=5), min_size=1, max_size=8),
)
def test_reads_only_ever_return_workspace_files(tmp_path_factory: pytest.TempPathFactory, links, requests) -> None:  # noqa: ANN001
    base = tmp_path_factory.mktemp("prop")
    root, outside = base / "ws", base / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "victim.txt").write_text("OUTSIDE")
    (root / "b").mkdir()
    (root / "inside.txt").write_text("inside")
    (root / "b" / "f").write_text("inside")
    for name, target in links:
        link = root / name
        if not link.exists() and not link.is_symlink() and link.parent.is_dir():
            link.symlink_to(target)
    for parts in requests:
        try:
            data = paths.read_bytes(root, "/".join(parts))
        except (WorkspacePathError, FileNotFoundError, IsADirectoryError, NotADirectoryError):
            continue
        assert data == b"inside"
    for listed in paths.list_files(root):
        assert (root / listed).resolve().is_relative_to(root.resolve())
