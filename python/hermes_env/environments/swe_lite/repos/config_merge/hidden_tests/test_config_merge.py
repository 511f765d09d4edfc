import unittest

from settings import DEFAULTS, deep_merge, get, load


class TestSettings(unittest.TestCase):
    def test_merge_values(self):
        merged = deep_merge({"a": {"x": 1, "z": 0}, "b": 1}, {"a": {"y": 2, "z": 3}, "c": 4})
        self.assertEqual(merged, {"a": {"x": 1, "y": 2, "z": 3}, "b": 1, "c": 4})

    def test_inputs_untouched(self):
        base = {"a": {"x": 1}}
        override = {"a": {"y": 2}}
        deep_merge(base, override)
        self.assertEqual(base, {"a": {"x": 1}})
        self.assertEqual(override, {"a": {"y": 2}})

    def test_load_keeps_defaults(self):
        cfg = load({"server": {"port": 9000}})
        self.assertEqual(get(cfg, "server.port"), 9000)
        self.assertEqual(get(cfg, "server.host"), "127.0.0.1")
        self.assertEqual(DEFAULTS["server"]["port"], 8000)
        self.assertIsNone(get(cfg, "server.missing"))


if __name__ == "__main__":
    unittest.main()
