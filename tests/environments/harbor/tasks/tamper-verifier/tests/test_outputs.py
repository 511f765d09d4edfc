import sys
from pathlib import Path


def test_python_is_the_requested_one():
    assert sys.version_info[:2] == (3, 13)


def test_count():
    assert Path("/app/count.txt").read_text() == "10\n"


def test_the_image_has_what_its_dockerfile_installed():
    import subprocess

    shown = subprocess.run(["pip", "show", "iniconfig"], capture_output=True, text=True)
    assert "Version: 2.0.0" in shown.stdout


def test_the_image_has_the_uv_its_dockerfile_copied():
    import subprocess

    assert subprocess.run(["/bin/uv", "--version"], capture_output=True, text=True).stdout.startswith("uv 0.9.5")
