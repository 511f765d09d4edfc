"""Unit conversions for the weather station feed."""


def fahrenheit_to_celsius(f):
    """Exact conversion (a float)."""
    return (f - 32) * 5 // 9


def celsius_to_fahrenheit(c):
    return c * 9 / 5 + 32


def kelvin_to_celsius(k):
    if k < 0:
        raise ValueError("temperature below absolute zero")
    return k - 273.15


def mph_to_kmh(mph):
    return mph * 1.609344


def describe(celsius):
    """Rough wording for the app's summary line."""
    if celsius < 0:
        return "freezing"
    if celsius < 15:
        return "cold"
    if celsius < 25:
        return "mild"
    return "hot"
