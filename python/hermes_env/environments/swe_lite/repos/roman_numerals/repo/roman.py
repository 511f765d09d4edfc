"""Roman numeral conversion."""

_VALUES = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}
_TABLE = [
    (1000, "M"), (900, "CM"), (500, "D"), (400, "CD"),
    (100, "C"), (90, "XC"), (50, "L"), (40, "XL"),
    (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I"),
]


def to_roman(number):
    """1994 -> 'MCMXCIV' (1..3999)."""
    if not 0 < number < 4000:
        raise ValueError("number must be between 1 and 3999")
    out = []
    for value, symbol in _TABLE:
        count, number = divmod(number, value)
        out.append(symbol * count)
    return "".join(out)


def from_roman(text):
    """'MCMXCIV' -> 1994."""
    text = text.strip().upper()
    if not text or any(ch not in _VALUES for ch in text):
        raise ValueError(f"not a roman numeral: {text!r}")
    total = 0
    for i, ch in enumerate(text):
        value = _VALUES[ch]
        nxt = _VALUES[text[i + 1]] if i + 1 < len(text) else 0
        if value <= nxt:
            total -= value
        else:
            total += value
    return total
