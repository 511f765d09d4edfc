import unittest

from csvlite import parse, split_line


class TestCsv(unittest.TestCase):
    def test_plain(self):
        self.assertEqual(split_line("a,b,c"), ["a", "b", "c"])

    def test_quoted_separator(self):
        self.assertEqual(split_line('1,"a, b",2'), ["1", "a, b", "2"])

    def test_escaped_quotes(self):
        self.assertEqual(split_line('1,"say ""hi""",x'), ["1", 'say "hi"', "x"])
        self.assertEqual(split_line('""""'), ['"'])

    def test_empty_fields(self):
        self.assertEqual(split_line(",,"), ["", "", ""])

    def test_parse(self):
        self.assertEqual(parse('a;b\n\n"x;y";z\n', sep=";"), [["a", "b"], ["x;y", "z"]])

    def test_unterminated(self):
        with self.assertRaises(ValueError):
            split_line('"abc')


if __name__ == "__main__":
    unittest.main()
