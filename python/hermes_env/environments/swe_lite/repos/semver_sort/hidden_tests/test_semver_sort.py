import unittest

from versions import is_newer, latest, parse


class TestVersions(unittest.TestCase):
    def test_numeric_compare(self):
        self.assertEqual(latest(["1.9.0", "1.10.0", "1.2.0"]), "1.10.0")
        self.assertTrue(is_newer("1.10.0", "1.9.0"))
        self.assertTrue(is_newer("10.0.0", "9.99.99"))

    def test_prerelease(self):
        self.assertTrue(is_newer("2.0.0", "2.0.0-rc.1"))
        self.assertFalse(is_newer("2.0.0-rc.1", "2.0.0"))

    def test_parse(self):
        self.assertEqual(parse("v1.2.3-rc.1"), ((1, 2, 3), "rc.1"))
        with self.assertRaises(ValueError):
            parse("1.2")


if __name__ == "__main__":
    unittest.main()
