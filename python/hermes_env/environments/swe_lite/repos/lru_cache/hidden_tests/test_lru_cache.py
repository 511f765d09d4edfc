import unittest

from lru import LRUCache


class TestLRU(unittest.TestCase):
    def test_get_refreshes(self):
        c = LRUCache(2)
        c.put("a", 1)
        c.put("b", 2)
        self.assertEqual(c.get("a"), 1)
        c.put("c", 3)
        self.assertIn("a", c)
        self.assertNotIn("b", c)

    def test_put_refreshes(self):
        c = LRUCache(2)
        c.put("a", 1)
        c.put("b", 2)
        c.put("a", 10)
        c.put("c", 3)
        self.assertEqual(c.get("a"), 10)
        self.assertNotIn("b", c)

    def test_stats(self):
        c = LRUCache(1)
        c.put("x", 1)
        c.get("x")
        c.get("y")
        self.assertEqual((c.hits, c.misses), (1, 1))
        self.assertEqual(len(c), 1)


if __name__ == "__main__":
    unittest.main()
