"""Merging time intervals for the calendar free/busy view."""


def merge(intervals):
    """Merge overlapping or touching [start, end] intervals; returns a new sorted list.

    >>> merge([[1, 3], [2, 6], [8, 10]])
    [[1, 6], [8, 10]]
    """
    ordered = sorted([list(i) for i in intervals], key=lambda i: i[0])
    merged = []
    for start, end in ordered:
        if start > end:
            raise ValueError(f"interval [{start}, {end}] ends before it starts")
        if merged and start < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged


def total_length(intervals):
    """Total time covered, counting overlaps once."""
    return sum(end - start for start, end in merge(intervals))


def gaps(intervals, day_start, day_end):
    """Free slots between day_start and day_end."""
    free = []
    cursor = day_start
    for start, end in merge(intervals):
        if start > cursor:
            free.append([cursor, min(start, day_end)])
        cursor = max(cursor, end)
    if cursor < day_end:
        free.append([cursor, day_end])
    return free
