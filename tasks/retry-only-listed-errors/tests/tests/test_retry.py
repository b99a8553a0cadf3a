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

    def test_other_exceptions_not_retried(self):
        waits = []
        f = Flaky(1, exc=ValueError)
        wrapped = retry(attempts=5, on=(ConnectionError, TimeoutError), delay=1, sleep=waits.append)(f)
        with self.assertRaisesRegex(ValueError, "failure 1"):
            wrapped()
        self.assertEqual(f.calls, 1)
        self.assertEqual(waits, [])

    def test_single_type(self):
        f = Flaky(1, exc=KeyError)
        wrapped = retry(attempts=3, on=ConnectionError, sleep=lambda s: None)(f)
        with self.assertRaises(KeyError):
            wrapped()
        self.assertEqual(f.calls, 1)

    def test_subclasses_retried(self):
        f = Flaky(2, exc=ConnectionResetError)
        wrapped = retry(attempts=3, on=ConnectionError, sleep=lambda s: None)(f)
        self.assertEqual(wrapped(), "ok")
        self.assertEqual(f.calls, 3)

    def test_oserror_family(self):
        f = Flaky(1, exc=TimeoutError)
        wrapped = retry(attempts=2, on=[OSError], sleep=lambda s: None)(f)
        self.assertEqual(wrapped(), "ok")

    def test_default_still_retries_everything(self):
        f = Flaky(2, exc=ValueError)
        wrapped = retry(attempts=3, sleep=lambda s: None)(f)
        self.assertEqual(wrapped(), "ok")

    def test_mixed_failures_stop_at_unlisted(self):
        calls = []

        def f():
            calls.append(1)
            if len(calls) == 1:
                raise ConnectionError("net")
            raise ValueError("parse")

        wrapped = retry(attempts=5, on=ConnectionError, sleep=lambda s: None)(f)
        with self.assertRaises(ValueError):
            wrapped()
        self.assertEqual(len(calls), 2)


if __name__ == "__main__":
    unittest.main()
