import unittest

from pagination import page, page_count, page_links


class TestPagination(unittest.TestCase):
    def test_count(self):
        self.assertEqual(page_count(45, 10), 5)
        self.assertEqual(page_count(40, 10), 4)
        self.assertEqual(page_count(1, 10), 1)
        self.assertEqual(page_count(0, 10), 0)

    def test_page(self):
        items = list(range(45))
        self.assertEqual(page(items, 5, 10), [40, 41, 42, 43, 44])
        self.assertEqual(page(items, 6, 10), [])

    def test_links(self):
        self.assertEqual(page_links(5, page_count(45, 10)), [3, 4, 5])

    def test_bad_args(self):
        with self.assertRaises(ValueError):
            page_count(10, 0)


if __name__ == "__main__":
    unittest.main()
