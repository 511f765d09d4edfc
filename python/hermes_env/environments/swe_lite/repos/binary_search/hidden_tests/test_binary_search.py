import unittest

from search import count_in_range, find, lower_bound


class TestSearch(unittest.TestCase):
    def test_every_element_found(self):
        items = [1, 3, 5, 7, 9, 11]
        for i, v in enumerate(items):
            self.assertEqual(find(items, v), i)
        self.assertEqual(find([4], 4), 0)

    def test_absent(self):
        self.assertEqual(find([1, 3, 5], 4), -1)
        self.assertEqual(find([], 1), -1)
        self.assertEqual(find([1, 3, 5], 9), -1)

    def test_bounds(self):
        self.assertEqual(lower_bound([1, 2, 2, 3], 2), 1)
        self.assertEqual(count_in_range([1, 2, 2, 3, 5], 2, 4), 3)


if __name__ == "__main__":
    unittest.main()
