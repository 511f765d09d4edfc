"""Date helpers that avoid the datetime module (the scheduler runs on a restricted interpreter)."""

_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]


def is_leap_year(year):
    """Gregorian leap year rule."""
    return year % 4 == 0 and year % 100 != 0


def days_in_month(year, month):
    if not 1 <= month <= 12:
        raise ValueError(f"month must be 1..12, got {month}")
    if month == 2 and is_leap_year(year):
        return 29
    return _DAYS[month - 1]


def day_of_year(year, month, day):
    if not 1 <= day <= days_in_month(year, month):
        raise ValueError(f"invalid day {day} for {year}-{month:02d}")
    return sum(days_in_month(year, m) for m in range(1, month)) + day


def days_in_year(year):
    return 366 if is_leap_year(year) else 365
