import unittest

from intervals import gaps, merge, total_length


class TestIntervals(unittest.TestCase):
    def test_overlap(self):
        self.assertEqual(merge([[1, 3], [2, 6], [8, 10]]), [[1, 6], [8, 10]])

    def test_touching(self):
        self.assertEqual(merge([[1, 2], [2, 3]]), [[1, 3]])
        self.assertEqual(merge([[5, 7], [1, 5]]), [[1, 7]])

    def test_gaps(self):
        self.assertEqual(gaps([[9, 10], [10, 12], [13, 14]], 8, 17), [[8, 9], [12, 13], [14, 17]])

    def test_total(self):
        self.assertEqual(total_length([[0, 5], [3, 8]]), 8)

    def test_invalid(self):
        with self.assertRaises(ValueError):
            merge([[3, 1]])


if __name__ == "__main__":
    unittest.main()
