import unittest

from retry import retry


class Flaky:
    def __init__(self, failures):
        self.failures = failures
        self.calls = 0

    def __call__(self):
        self.calls += 1
        if self.calls <= self.failures:
            raise ConnectionError(f"attempt {self.calls}")
        return "ok"


class TestRetry(unittest.TestCase):
    def test_succeeds_after_failures(self):
        flaky = Flaky(2)
        self.assertEqual(retry(times=3)(flaky)(), "ok")
        self.assertEqual(flaky.calls, 3)

    def test_last_error_propagates(self):
        flaky = Flaky(10)
        with self.assertRaises(ConnectionError) as info:
            retry(times=3)(flaky)()
        self.assertEqual(str(info.exception), "attempt 3")
        self.assertEqual(flaky.calls, 3)

    def test_other_exceptions_not_retried(self):
        calls = []

        @retry(times=3, exceptions=(ConnectionError,))
        def boom():
            calls.append(1)
            raise KeyError("x")

        with self.assertRaises(KeyError):
            boom()
        self.assertEqual(len(calls), 1)

    def test_backoff(self):
        slept = []
        flaky = Flaky(2)
        retry(times=3, delay=0.5, sleep=slept.append)(flaky)()
        self.assertEqual(slept, [0.5, 1.0])


if __name__ == "__main__":
    unittest.main()
