import unittest

from calendar_utils import day_of_year, days_in_month, days_in_year, is_leap_year


class TestCalendar(unittest.TestCase):
    def test_leap_rules(self):
        self.assertTrue(is_leap_year(2024))
        self.assertFalse(is_leap_year(2023))
        self.assertFalse(is_leap_year(1900))
        self.assertTrue(is_leap_year(2000))
        self.assertTrue(is_leap_year(2400))

    def test_days(self):
        self.assertEqual(days_in_month(2000, 2), 29)
        self.assertEqual(days_in_month(2100, 2), 28)
        self.assertEqual(day_of_year(2000, 12, 31), 366)
        self.assertEqual(days_in_year(1900), 365)

    def test_invalid(self):
        with self.assertRaises(ValueError):
            day_of_year(2023, 2, 29)


if __name__ == "__main__":
    unittest.main()
