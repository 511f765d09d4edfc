"""A tiny CSV line splitter for the import tool (one record per line, RFC 4180 quoting)."""


def split_line(line, sep=","):
    """Split one CSV line into fields.

    Fields may be quoted with double quotes; inside a quoted field the separator is literal and a
    doubled quote ("") stands for one quote character.
    """
    fields = []
    field = []
    in_quotes = False
    i = 0
    while i < len(line):
        ch = line[i]
        if in_quotes:
            if ch == '"':
                in_quotes = False
            else:
                field.append(ch)
        elif ch == '"':
            in_quotes = True
        elif ch == sep:
            fields.append("".join(field))
            field = []
        else:
            field.append(ch)
        i += 1
    if in_quotes:
        raise ValueError("unterminated quoted field")
    fields.append("".join(field))
    return fields


def parse(text, sep=","):
    """Rows of a CSV document (blank lines skipped)."""
    return [split_line(line, sep) for line in text.splitlines() if line.strip()]
