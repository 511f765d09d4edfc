"""V4A patches: parsing hermes-agent's grammar and applying hunks."""

from __future__ import annotations

from hermes_env.tools.v4a import apply_hunks, parse_v4a_patch
from hypothesis import given
from hypothesis import strategies as st


def test_parse_all_operation_kinds() -> None:
    ops, error = parse_v4a_patch(
        "*** Begin Patch\n*** Update File: a.py\n@@ class A @@\n ctx\n-old\n+new\nimplicit context\n"
        "*** Add File: b.txt\n+one\n+two\n*** Delete File: c.txt\n*** Move File: d.txt -> e/d.txt\n*** End Patch\n"
    )
    assert error is None
    assert [(o.kind, o.path, o.new_path) for o in ops] == [
        ("update", "a.py", None), ("add", "b.txt", None), ("delete", "c.txt", None), ("move", "d.txt", "e/d.txt"),
    ]  # fmt: skip
    hunk = ops[0].hunks[0]
    assert hunk.context_hint == "class A"
    assert hunk.lines == [(" ", "ctx"), ("-", "old"), ("+", "new"), (" ", "implicit context")]
    assert ops[1].added_content == "one\ntwo"


def test_parse_without_markers_and_codex_move_to() -> None:
    ops, error = parse_v4a_patch("*** Update File: a.py\n*** Move to: b.py\n-x\n+y\n")
    assert error is None and ops[0].new_path == "b.py"
    assert parse_v4a_patch("no operations here")[1] is not None


def test_apply_hunks_fuzzy_hint_and_pure_additions() -> None:
    ops, _ = parse_v4a_patch("*** Update File: f\n@@ def g @@\n def g():\n-    return 1\n+    return 2\n")
    assert apply_hunks("def g():\n    return 1\n", ops[0].hunks) == ("def g():\n    return 2\n", None)
    ops, _ = parse_v4a_patch("*** Update File: f\n@@ import os @@\n+import sys\n")
    assert apply_hunks("import os\nx = 1\n", ops[0].hunks) == ("import os\nimport sys\nx = 1\n", None)
    ops, _ = parse_v4a_patch("*** Update File: f\n+tail\n")
    assert apply_hunks("a", ops[0].hunks) == ("a\ntail\n", None)
    ops, _ = parse_v4a_patch("*** Update File: f\n-missing line\n+x\n")
    content, error = apply_hunks("something else entirely\n", ops[0].hunks)
    assert content == "something else entirely\n" and error is not None and error.startswith("hunk 1")


def test_blank_context_lines_inside_a_hunk_are_kept() -> None:
    ops, _ = parse_v4a_patch("*** Update File: f\n a\n\n-b\n+c\n\n")
    assert ops[0].hunks[0].lines == [(" ", "a"), (" ", ""), ("-", "b"), ("+", "c")]
    assert apply_hunks("a\n\nb\n", ops[0].hunks) == ("a\n\nc\n", None)


lines = st.lists(st.text(alphabet="abcdef =()", min_size=1, max_size=12), min_size=1, max_size=8, unique=True)


@given(lines, st.data())
def test_a_generated_single_line_edit_applies_exactly(file_lines: list[str], data: st.DataObject) -> None:
    i = data.draw(st.integers(0, len(file_lines) - 1))
    replacement = data.draw(st.text(alphabet="XYZ", min_size=1, max_size=5))
    before = file_lines[max(0, i - 1) : i]
    patch = "*** Begin Patch\n*** Update File: f\n"
    patch += "".join(f" {line}\n" for line in before) + f"-{file_lines[i]}\n+{replacement}\n*** End Patch"
    ops, error = parse_v4a_patch(patch)
    assert error is None
    content = "\n".join(file_lines) + "\n"
    expected = "\n".join(file_lines[:i] + [replacement] + file_lines[i + 1 :]) + "\n"
    new, problem = apply_hunks(content, ops[0].hunks)
    if problem is None and content.count("\n".join([*before, file_lines[i]])) == 1:
        assert new == expected
