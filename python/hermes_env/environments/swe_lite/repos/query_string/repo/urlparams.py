"""Query-string parsing for the legacy request router (no framework available)."""

from urllib.parse import quote_plus, unquote


def parse_query(query):
    """'a=1&b=x+y&flag' -> {'a': ['1'], 'b': ['x y'], 'flag': ['']}.

    Keys and values are URL-decoded (``+`` means a space, ``%XX`` an escaped byte); repeated keys
    collect all their values in order.
    """
    if query.startswith("?"):
        query = query[1:]
    params = {}
    for part in query.split("&"):
        if not part:
            continue
        key, _, value = part.partition("=")
        params.setdefault(unquote(key), []).append(unquote(value))
    return params


def first(params, key, default=None):
    values = params.get(key)
    return values[0] if values else default


def build_query(params):
    """Inverse of parse_query for dicts of lists."""
    return "&".join(f"{quote_plus(k)}={quote_plus(v)}" for k, vs in params.items() for v in vs)
