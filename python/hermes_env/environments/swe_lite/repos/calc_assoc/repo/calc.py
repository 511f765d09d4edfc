"""A small arithmetic expression evaluator (+, -, *, /, parentheses) for the spreadsheet formulas."""

import re

_TOKEN = re.compile(r"\s*(?:(\d+\.?\d*)|(.))")


def tokenize(text):
    tokens = []
    for number, op in _TOKEN.findall(text):
        if number:
            tokens.append(float(number) if "." in number else int(number))
        elif op.strip():
            if op not in "+-*/()":
                raise ValueError(f"unexpected character {op!r}")
            tokens.append(op)
    return tokens


class _Parser:
    def __init__(self, tokens):
        self.tokens = tokens
        self.pos = 0

    def peek(self):
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self):
        tok = self.peek()
        self.pos += 1
        return tok

    def expr(self):
        left = self.term()
        if self.peek() in ("+", "-"):
            op = self.take()
            right = self.expr()
            left = left + right if op == "+" else left - right
        return left

    def term(self):
        left = self.factor()
        while self.peek() in ("*", "/"):
            op = self.take()
            right = self.factor()
            left = left * right if op == "*" else left / right
        return left

    def factor(self):
        tok = self.take()
        if tok == "(":
            value = self.expr()
            if self.take() != ")":
                raise ValueError("missing ')'")
            return value
        if tok == "-":
            return -self.factor()
        if isinstance(tok, (int, float)):
            return tok
        raise ValueError(f"unexpected token {tok!r}")


def evaluate(text):
    parser = _Parser(tokenize(text))
    value = parser.expr()
    if parser.peek() is not None:
        raise ValueError(f"unexpected token {parser.peek()!r}")
    return value
