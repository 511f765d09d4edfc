from pathlib import Path


def test_size():
    assert Path("/app/size.txt").read_text().strip() == str(2560 * 1024 * 1024)
