import unittest

from ratelimit import TokenBucket


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class TestBucket(unittest.TestCase):
    def test_burst_capped_after_idle(self):
        clock = FakeClock()
        bucket = TokenBucket(rate=1, capacity=5, clock=clock)
        clock.now = 100.0
        allowed = sum(bucket.try_acquire() for _ in range(20))
        self.assertEqual(allowed, 5)

    def test_refill_rate(self):
        clock = FakeClock()
        bucket = TokenBucket(rate=2, capacity=2, clock=clock)
        self.assertTrue(bucket.try_acquire(2))
        self.assertFalse(bucket.try_acquire())
        self.assertAlmostEqual(bucket.wait_time(), 0.5)
        clock.now = 0.5
        self.assertTrue(bucket.try_acquire())

    def test_invalid(self):
        with self.assertRaises(ValueError):
            TokenBucket(0, 1)


if __name__ == "__main__":
    unittest.main()
