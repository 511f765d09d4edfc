"""Host-side file operations on a slot's workspace, including symlinks swapped in after the path check."""

from __future__ import annotations

from pathlib import Path

import pytest
from hermes_env.sandbox import workspace as ws
from hermes_env.sandbox.isolation import SlotIdentity

ME = SlotIdentity(None, None)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "ws"
    r.mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "victim.txt").write_text("precious")
    return r


@pytest.mark.parametrize(
    ("given", "expected"),
    [("a.txt", "a.txt"), ("/a.txt", "a.txt"), ("/workspace/d/a.txt", "d/a.txt"), ("./d/../a.txt", "a.txt"), ("", ".")],
)
def test_paths_are_workspace_rooted(root: Path, given: str, expected: str) -> None:
    assert ws.resolve(root, given) == (root / expected).resolve()


@pytest.mark.parametrize("bad", ["..", "../outside/victim.txt", "d/../../x", "/workspace/../../x"])
def test_dotdot_out_is_refused(root: Path, bad: str) -> None:
    with pytest.raises(PermissionError, match="outside the workspace"):
        ws.resolve(root, bad)


def test_nul_bytes_are_refused(root: Path) -> None:
    with pytest.raises(PermissionError, match="NUL"):
        ws.resolve(root, "a\x00b")


def test_write_creates_parents_and_round_trips(root: Path) -> None:
    ws.write_file(root, "x/y/z.bin", b"\x00\x01", ME)
    assert ws.read_file(root, "x/y/z.bin", 100) == b"\x00\x01"
    ws.write_file(root, "x/y/z.bin", b"short", ME)  # replaced, not appended
    assert ws.read_file(root, "/workspace/x/y/z.bin", 100) == b"short"
    assert ws.list_files(root) == ["x/y/z.bin"]
    with pytest.raises(ws.FileTooLargeError):
        ws.read_file(root, "x/y/z.bin", 2)


def test_parent_swapped_for_a_symlink_after_the_check_is_refused(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outside = root.parent / "outside"
    (root / "d").mkdir()
    checked = ws.resolve(root, "d/victim.txt")
    # The sandbox swaps d for a link to the host between the check and the write.
    (root / "d").rmdir()
    (root / "d").symlink_to(outside)
    monkeypatch.setattr(ws, "resolve", lambda r, p: checked)
    with pytest.raises(PermissionError, match="changed while writing"):
        ws.write_file(root, "d/victim.txt", b"pwned", ME)
    assert (outside / "victim.txt").read_text() == "precious"


def test_final_component_swapped_for_a_symlink_is_not_truncated(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outside = root.parent / "outside"
    checked = ws.resolve(root, "f.txt")
    (root / "f.txt").symlink_to(outside / "victim.txt")
    monkeypatch.setattr(ws, "resolve", lambda r, p: checked)
    with pytest.raises(PermissionError, match="symlink"):
        ws.write_file(root, "f.txt", b"pwned", ME)
    assert (outside / "victim.txt").read_text() == "precious"
