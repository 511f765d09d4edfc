"""Greedy word wrapping for the terminal renderer."""


def wrap(text, width):
    """Split text into lines of at most ``width`` characters, breaking at spaces.

    Words longer than ``width`` get a line of their own.
    """
    if width < 1:
        raise ValueError("width must be at least 1")
    lines = []
    current = ""
    for word in text.split():
        if not current:
            current = word
        elif len(current) + 1 + len(word) <= width + 1:
            current += " " + word
        else:
            lines.append(current)
            current = word
    if current:
        lines.append(current)
    return lines


def fill(text, width):
    return "\n".join(wrap(text, width))


def indent(text, prefix="    "):
    return "\n".join(prefix + line if line else line for line in text.split("\n"))
