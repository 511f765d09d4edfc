import unittest

from histogram import bin_edges, histogram


class TestHistogram(unittest.TestCase):
    def test_last_bin_includes_high(self):
        self.assertEqual(histogram([0, 5, 10], 0, 10, 2), [1, 2])
        self.assertEqual(histogram([1.0], 0, 1, 4), [0, 0, 0, 1])

    def test_counts(self):
        self.assertEqual(histogram([1, 2, 3, 7, 9, -1, 11], 0, 10, 5), [1, 2, 0, 1, 1])

    def test_total(self):
        values = [i / 10 for i in range(101)]
        self.assertEqual(sum(histogram(values, 0, 10, 7)), 101)

    def test_edges(self):
        self.assertEqual(bin_edges(0, 1, 4), [0, 0.25, 0.5, 0.75, 1.0])


if __name__ == "__main__":
    unittest.main()
