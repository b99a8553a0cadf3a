import contextlib
import io
import unittest

from .helpers import fixture_file
from .helpers import run as _run


def run(path, *argv):
    """Like helpers.run, with usage errors on stderr kept out of the way."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            return _run(path, *argv)
        except SystemExit as e:
            return e.code, []


class LimitTest(unittest.TestCase):
    def test_limit(self):
        rc, lines = run(fixture_file(self), "list", "--limit", "2")
        self.assertEqual(rc, 0)
        self.assertEqual([l.split()[0] for l in lines], ["2024-05-20", "2024-04-11"])

    def test_limit_after_tag_filter(self):
        rc, lines = run(fixture_file(self), "list", "--tag", "go", "--limit", "2")
        self.assertEqual(rc, 0)
        self.assertEqual(len(lines), 2)
        self.assertIn("https://pkg.go.dev/", lines[0])
        self.assertIn("https://go.dev/blog/", lines[1])

    def test_limit_larger_than_list(self):
        rc, lines = run(fixture_file(self), "list", "--limit", "50")
        self.assertEqual(rc, 0)
        self.assertEqual(len(lines), 5)

    def test_no_limit_shows_all(self):
        rc, lines = run(fixture_file(self), "list")
        self.assertEqual(len(lines), 5)

    def test_bad_limits_are_usage_errors(self):
        for bad in ("0", "-1", "two", "1.5"):
            with self.subTest(limit=bad):
                rc, lines = run(fixture_file(self), "list", "--limit", bad)
                self.assertEqual(rc, 2)
                self.assertEqual(lines, [])


if __name__ == "__main__":
    unittest.main()
