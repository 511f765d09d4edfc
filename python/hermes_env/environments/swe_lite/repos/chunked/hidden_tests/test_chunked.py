import unittest

from batching import batched_sum, chunks, interleave, window


class TestBatching(unittest.TestCase):
    def test_partial_last_chunk(self):
        self.assertEqual(chunks([1, 2, 3, 4, 5], 2), [[1, 2], [3, 4], [5]])
        self.assertEqual(chunks(range(3), 5), [[0, 1, 2]])
        self.assertEqual(chunks([], 3), [])

    def test_exact(self):
        self.assertEqual(chunks("abcd", 2), [["a", "b"], ["c", "d"]])

    def test_sums(self):
        self.assertEqual(batched_sum(range(1, 8), 3), [6, 15, 7])

    def test_helpers(self):
        self.assertEqual(interleave([1, 2], "ab"), [1, "a", 2, "b"])
        self.assertEqual(window([1, 2, 3], 2), [(1, 2), (2, 3)])


if __name__ == "__main__":
    unittest.main()
