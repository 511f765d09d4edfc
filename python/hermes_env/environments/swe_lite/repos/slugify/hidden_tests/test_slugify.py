import unittest

from textutil import slugify, title_case


class TestSlugify(unittest.TestCase):
    def test_basic(self):
        self.assertEqual(slugify("Hello, World!"), "hello-world")

    def test_accents_and_spaces(self):
        self.assertEqual(slugify("  Crème   Brûlée -- Recipe "), "creme-brulee-recipe")

    def test_truncation_has_no_trailing_hyphen(self):
        self.assertEqual(slugify("abc def", max_length=4), "abc")

    def test_plain(self):
        self.assertEqual(slugify("simple"), "simple")

    def test_title_case(self):
        self.assertEqual(title_case("the lord of the rings"), "The Lord of the Rings")


if __name__ == "__main__":
    unittest.main()
