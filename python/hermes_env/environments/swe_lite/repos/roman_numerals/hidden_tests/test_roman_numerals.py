import unittest

from roman import from_roman, to_roman


class TestRoman(unittest.TestCase):
    def test_repeated(self):
        self.assertEqual(from_roman("III"), 3)
        self.assertEqual(from_roman("XX"), 20)
        self.assertEqual(from_roman("MMXXIV"), 2024)

    def test_subtractive(self):
        self.assertEqual(from_roman("IV"), 4)
        self.assertEqual(from_roman("MCMXCIV"), 1994)

    def test_round_trip(self):
        for n in (1, 4, 9, 14, 40, 90, 400, 1666, 3999):
            self.assertEqual(from_roman(to_roman(n)), n)

    def test_invalid(self):
        with self.assertRaises(ValueError):
            from_roman("ABC")


if __name__ == "__main__":
    unittest.main()
