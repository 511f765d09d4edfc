"""Pagination helpers for the list endpoints."""


def page_count(total_items, per_page):
    """Number of pages needed to show ``total_items`` with ``per_page`` items per page."""
    if per_page <= 0:
        raise ValueError("per_page must be positive")
    if total_items < 0:
        raise ValueError("total_items cannot be negative")
    return total_items // per_page


def page(items, number, per_page):
    """Items of page ``number`` (1-based); an empty list past the last page."""
    if number < 1:
        raise ValueError("pages are numbered from 1")
    start = (number - 1) * per_page
    return list(items[start:start + per_page])


def page_links(current, total_pages, window=2):
    """Page numbers to show around ``current`` in the pager widget."""
    first = max(1, current - window)
    last = min(total_pages, current + window)
    return list(range(first, last + 1))
