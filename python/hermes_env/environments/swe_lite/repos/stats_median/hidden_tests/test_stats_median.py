import unittest

from stats import mean, median, mode, spread


class TestStats(unittest.TestCase):
    def test_median_odd(self):
        self.assertEqual(median([3, 1, 2]), 2)

    def test_median_even(self):
        self.assertEqual(median([1, 2, 3, 4]), 2.5)
        self.assertEqual(median([10, 2, 4, 8]), 6)

    def test_median_empty(self):
        with self.assertRaises(ValueError):
            median([])

    def test_others(self):
        self.assertEqual(mean([1, 2, 3, 4]), 2.5)
        self.assertEqual(mode([1, 2, 2, 3, 3]), 2)
        self.assertEqual(spread([4, 9, 1]), 8)


if __name__ == "__main__":
    unittest.main()
