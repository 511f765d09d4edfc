import unittest

from wrap import fill, wrap


class TestWrap(unittest.TestCase):
    def test_width_respected(self):
        self.assertEqual(wrap("aaa bbb ccc", 6), ["aaa", "bbb", "ccc"])
        self.assertEqual(wrap("aaa bbb ccc", 7), ["aaa bbb", "ccc"])

    def test_long_word(self):
        self.assertEqual(wrap("a extraordinary b", 5), ["a", "extraordinary", "b"])

    def test_property(self):
        text = "the quick brown fox jumps over the lazy dog " * 5
        for width in range(5, 30):
            for line in wrap(text, width):
                self.assertLessEqual(len(line), width)

    def test_fill(self):
        self.assertEqual(fill("one two three", 7), "one two\nthree")


if __name__ == "__main__":
    unittest.main()
