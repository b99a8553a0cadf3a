import logging
import unittest

from fetchkit import retry

logging.disable(logging.CRITICAL)


class Flaky:
    def __init__(self, failures, exc=ConnectionError):
        self.failures = failures
        self.exc = exc
        self.calls = 0

    def __call__(self):
        self.calls += 1
        if self.calls <= self.failures:
            raise self.exc(f"failure {self.calls}")
        return "ok"


class RetryTest(unittest.TestCase):
    def test_succeeds_after_failures(self):
        waits = []
        f = Flaky(2)
        wrapped = retry(attempts=3, on=ConnectionError, delay=1, backoff=2, sleep=waits.append)(f)
        self.assertEqual(wrapped(), "ok")
        self.assertEqual(f.calls, 3)
        self.assertEqual(waits, [1, 2])

    def test_gives_up(self):
        f = Flaky(5)
        wrapped = retry(attempts=2, on=(ConnectionError,), sleep=lambda s: None)(f)
        with self.assertRaisesRegex(ConnectionError, "failure 2"):
            wrapped()
        self.assertEqual(f.calls, 2)

    def test_no_delay_no_sleep(self):
        waits = []
        retry(attempts=3, on=ConnectionError, sleep=waits.append)(Flaky(2))()
        self.assertEqual(waits, [])

    def test_keeps_metadata(self):
        @retry()
        def named():
            """doc"""
        self.assertEqual(named.__name__, "named")
        self.assertEqual(named.__doc__, "doc")

    def test_bad_attempts(self):
        with self.assertRaises(ValueError):
            retry(attempts=0)


if __name__ == "__main__":
    unittest.main()
