import unittest

from units import celsius_to_fahrenheit, describe, fahrenheit_to_celsius, kelvin_to_celsius


class TestUnits(unittest.TestCase):
    def test_exact(self):
        self.assertAlmostEqual(fahrenheit_to_celsius(100), 37.7777777, places=5)
        self.assertAlmostEqual(fahrenheit_to_celsius(0), -17.7777777, places=5)
        self.assertEqual(fahrenheit_to_celsius(212), 100)

    def test_round_trip(self):
        for c in (-40, 0, 21.5, 37):
            self.assertAlmostEqual(fahrenheit_to_celsius(celsius_to_fahrenheit(c)), c)

    def test_misc(self):
        self.assertAlmostEqual(kelvin_to_celsius(273.15), 0)
        self.assertEqual(describe(fahrenheit_to_celsius(60)), "mild")


if __name__ == "__main__":
    unittest.main()
