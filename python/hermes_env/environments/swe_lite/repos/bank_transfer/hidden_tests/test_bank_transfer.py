import unittest

from bank import Account, InsufficientFunds, total, transfer


class TestBank(unittest.TestCase):
    def test_transfer(self):
        a, b = Account("a", 100), Account("b", 5)
        transfer(a, b, 30)
        self.assertEqual((a.balance, b.balance), (70, 35))

    def test_failed_transfer_changes_nothing(self):
        a, b = Account("a", 10), Account("b", 5)
        with self.assertRaises(InsufficientFunds):
            transfer(a, b, 50)
        self.assertEqual((a.balance, b.balance), (10, 5))
        self.assertEqual(b.history, [])
        self.assertEqual(total([a, b]), 15)

    def test_validation(self):
        with self.assertRaises(ValueError):
            Account("x").deposit(0)


if __name__ == "__main__":
    unittest.main()
