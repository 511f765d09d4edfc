"""Fixed-width histograms for the latency dashboard."""


def bin_edges(low, high, bins):
    if bins < 1:
        raise ValueError("need at least one bin")
    if high <= low:
        raise ValueError("high must be greater than low")
    width = (high - low) / bins
    return [low + i * width for i in range(bins + 1)]


def histogram(values, low, high, bins):
    """Counts per bin; bins are [edge_i, edge_i+1) except the last, which includes ``high``.

    Values outside [low, high] are ignored.
    """
    edges = bin_edges(low, high, bins)
    width = edges[1] - edges[0]
    counts = [0] * bins
    for v in values:
        if v < low or v > high:
            continue
        index = int((v - low) / width)
        if index < bins:
            counts[index] += 1
    return counts


def render(counts, width=40):
    """ASCII bars, scaled to the largest bin."""
    peak = max(counts) or 1
    return "\n".join("#" * round(c * width / peak) for c in counts)
