import unittest

from calc import evaluate


class TestCalc(unittest.TestCase):
    def test_left_assoc(self):
        self.assertEqual(evaluate("10 - 4 - 3"), 3)
        self.assertEqual(evaluate("1 - 2 + 3"), 2)
        self.assertEqual(evaluate("100 / 10 / 5"), 2)

    def test_precedence(self):
        self.assertEqual(evaluate("2 + 3 * 4"), 14)
        self.assertEqual(evaluate("(2 + 3) * 4"), 20)
        self.assertEqual(evaluate("-3 + 5"), 2)

    def test_errors(self):
        for bad in ("2 +", "(1 + 2", "3 $ 4", "1 2"):
            with self.assertRaises(ValueError):
                evaluate(bad)


if __name__ == "__main__":
    unittest.main()
