import sys
from pathlib import Path


def test_python_is_the_requested_one():
    assert sys.version_info[:2] == (3, 13)


def test_count():
    assert Path("/app/count.txt").read_text() == "10\n"
