"""Accounts and transfers for the ledger service."""


class InsufficientFunds(Exception):
    pass


class Account:
    def __init__(self, owner, balance=0):
        if balance < 0:
            raise ValueError("opening balance cannot be negative")
        self.owner = owner
        self.balance = balance
        self.history = []

    def deposit(self, amount):
        if amount <= 0:
            raise ValueError("deposit must be positive")
        self.balance += amount
        self.history.append(("deposit", amount))

    def withdraw(self, amount):
        if amount <= 0:
            raise ValueError("withdrawal must be positive")
        if amount > self.balance:
            raise InsufficientFunds(f"{self.owner} has {self.balance}, needs {amount}")
        self.balance -= amount
        self.history.append(("withdraw", amount))


def transfer(source, target, amount):
    """Move ``amount`` from source to target; on failure neither account changes."""
    target.deposit(amount)
    source.withdraw(amount)


def total(accounts):
    return sum(a.balance for a in accounts)
