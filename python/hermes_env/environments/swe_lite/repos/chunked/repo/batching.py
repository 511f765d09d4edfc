"""Batching helpers for the bulk-insert job."""


def chunks(items, size):
    """Consecutive lists of ``size`` items; the last one may be shorter."""
    if size < 1:
        raise ValueError("size must be at least 1")
    items = list(items)
    return [items[i:i + size] for i in range(0, len(items) - size + 1, size)]


def batched_sum(items, size):
    """Sum of each chunk, e.g. for progress reporting."""
    return [sum(c) for c in chunks(items, size)]


def interleave(*sequences):
    """interleave([1, 2], 'ab') -> [1, 'a', 2, 'b']; stops at the shortest."""
    out = []
    for group in zip(*sequences):
        out.extend(group)
    return out


def window(items, size):
    """Sliding windows: window([1, 2, 3], 2) -> [(1, 2), (2, 3)]."""
    items = list(items)
    return [tuple(items[i:i + size]) for i in range(len(items) - size + 1)]
