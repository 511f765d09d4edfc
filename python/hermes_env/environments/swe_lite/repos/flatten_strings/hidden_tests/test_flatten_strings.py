import unittest

from nested import chunk_pairs, depth, flatten


class TestNested(unittest.TestCase):
    def test_numbers(self):
        self.assertEqual(flatten([1, [2, [3, (4,)]], 5]), [1, 2, 3, 4, 5])

    def test_strings_are_atoms(self):
        self.assertEqual(flatten(["ab", ["c", ("d",)]]), ["ab", "c", "d"])
        self.assertEqual(flatten([b"xy", [b"z"]]), [b"xy", b"z"])

    def test_depth(self):
        self.assertEqual(depth([[1], [[2]]]), 3)

    def test_pairs(self):
        self.assertEqual(chunk_pairs(["a", ["b", "c"], "d", "e"]), [("a", "b"), ("c", "d")])


if __name__ == "__main__":
    unittest.main()
