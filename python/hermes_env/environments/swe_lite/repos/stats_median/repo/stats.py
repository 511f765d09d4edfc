"""Small descriptive statistics helpers used by the reporting job."""

from collections import Counter


def mean(values):
    """Arithmetic mean of a non-empty sequence."""
    values = list(values)
    if not values:
        raise ValueError("mean() of an empty sequence")
    return sum(values) / len(values)


def median(values):
    """Middle value of a non-empty sequence (average of the two middle values for even sizes)."""
    ordered = sorted(values)
    n = len(ordered)
    if n == 0:
        raise ValueError("median() of an empty sequence")
    mid = n // 2
    return ordered[mid]


def mode(values):
    """Most common value; ties go to the value seen first."""
    counts = Counter(values)
    if not counts:
        raise ValueError("mode() of an empty sequence")
    best = max(counts.values())
    for value in values:
        if counts[value] == best:
            return value


def spread(values):
    """Difference between the largest and the smallest value."""
    values = list(values)
    return max(values) - min(values)
