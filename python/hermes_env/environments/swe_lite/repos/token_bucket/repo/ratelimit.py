"""Token-bucket rate limiter for the outgoing webhook client."""

import time


class TokenBucket:
    """Allows bursts of up to ``capacity`` calls and a sustained ``rate`` calls per second.

    ``clock`` is injectable for tests (any function returning seconds as a float).
    """

    def __init__(self, rate, capacity, clock=time.monotonic):
        if rate <= 0 or capacity <= 0:
            raise ValueError("rate and capacity must be positive")
        self.rate = rate
        self.capacity = capacity
        self.clock = clock
        self.tokens = float(capacity)
        self.updated = clock()

    def _refill(self):
        now = self.clock()
        elapsed = max(0.0, now - self.updated)
        self.tokens = self.tokens + elapsed * self.rate
        self.updated = now

    def try_acquire(self, tokens=1):
        """Take ``tokens`` if available; returns whether it did."""
        self._refill()
        if tokens <= self.tokens:
            self.tokens -= tokens
            return True
        return False

    def wait_time(self, tokens=1):
        """Seconds until ``tokens`` would be available."""
        self._refill()
        missing = tokens - self.tokens
        return max(0.0, missing / self.rate)
