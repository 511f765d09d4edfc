"""Helpers for nested list data coming from the JSON API."""

from collections.abc import Iterable


def flatten(items):
    """Flatten arbitrarily nested lists/tuples into one list.

    Strings and bytes are atoms, not sequences of characters:
    flatten(["ab", ["c", ("d",)]]) == ["ab", "c", "d"]
    """
    out = []
    for item in items:
        if isinstance(item, Iterable):
            out.extend(flatten(item))
        else:
            out.append(item)
    return out


def depth(items):
    """Nesting depth: depth([]) == 1, depth([[1]]) == 2."""
    if not isinstance(items, (list, tuple)):
        return 0
    return 1 + max((depth(i) for i in items), default=0)


def chunk_pairs(items):
    """[1, 2, 3, 4] -> [(1, 2), (3, 4)]; an odd tail is dropped."""
    flat = flatten(items)
    return list(zip(flat[0::2], flat[1::2]))
