import unittest

from urlparams import build_query, first, parse_query


class TestQuery(unittest.TestCase):
    def test_plus_is_space(self):
        self.assertEqual(parse_query("q=hello+world%21"), {"q": ["hello world!"]})
        self.assertEqual(parse_query("?a+b=c%2Bd"), {"a b": ["c+d"]})

    def test_repeated_and_flags(self):
        params = parse_query("tag=a&tag=b&flag")
        self.assertEqual(params, {"tag": ["a", "b"], "flag": [""]})
        self.assertEqual(first(params, "tag"), "a")
        self.assertIsNone(first(params, "nope"))

    def test_round_trip(self):
        params = {"name": ["Ada Lovelace"], "expr": ["1+1=2"]}
        self.assertEqual(parse_query(build_query(params)), params)


if __name__ == "__main__":
    unittest.main()
