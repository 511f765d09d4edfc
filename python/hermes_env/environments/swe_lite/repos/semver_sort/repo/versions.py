"""Version handling for the plugin updater."""

import re

_VERSION = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.]+))?$")


def parse(version):
    """'v1.2.3-rc.1' -> (('1', '2', '3'), 'rc.1')."""
    match = _VERSION.match(version.strip())
    if not match:
        raise ValueError(f"not a semantic version: {version!r}")
    major, minor, patch, pre = match.groups()
    return (major, minor, patch), pre


def key(version):
    """Sort key: release numbers, then pre-releases before the release."""
    numbers, pre = parse(version)
    return numbers, (0, pre) if pre else (1, "")


def latest(versions):
    """The highest version in the list."""
    return max(versions, key=key)


def is_newer(candidate, current):
    return key(candidate) > key(current)
