"""A retry decorator for flaky network calls."""

import functools
import time


def retry(times=3, exceptions=(Exception,), delay=0.0, sleep=time.sleep):
    """Call the function up to ``times`` times while it raises one of ``exceptions``.

    If the last attempt fails too, its exception propagates to the caller.
    """
    if times < 1:
        raise ValueError("times must be at least 1")

    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            for attempt in range(1, times + 1):
                try:
                    return fn(*args, **kwargs)
                except exceptions:
                    if attempt < times and delay:
                        sleep(delay * attempt)
            return None

        wrapper.max_attempts = times
        return wrapper

    return decorate
