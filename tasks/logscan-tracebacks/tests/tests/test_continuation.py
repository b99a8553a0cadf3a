import io
import os
import tempfile
import unittest

from logscan import parse
from logscan.__main__ import main

LOG = """\
2024-05-02 14:03:10,001 INFO [web] GET /health 200
2024-05-02 14:03:11,532 ERROR [worker-3] Unhandled exception in job 8812
Traceback (most recent call last):
  File "/srv/app/jobs.py", line 88, in run
    result = handler(payload)
KeyError: 'customer_id'
2024-05-02 14:03:12,900 WARNING [worker-1] queue depth 512
"""


class ContinuationTest(unittest.TestCase):
    def test_traceback_attached(self):
        entries = list(parse(LOG.splitlines(keepends=True)))
        self.assertEqual([e.level for e in entries], ["INFO", "ERROR", "WARNING"])
        self.assertEqual(entries[1].message.split("\n"), [
            "Unhandled exception in job 8812",
            "Traceback (most recent call last):",
            '  File "/srv/app/jobs.py", line 88, in run',
            "    result = handler(payload)",
            "KeyError: 'customer_id'",
        ])
        self.assertEqual(entries[1].lineno, 2)
        self.assertEqual(entries[2].message, "queue depth 512")
        self.assertEqual(entries[2].lineno, 7)

    def test_last_entry_continuation(self):
        lines = [
            "2024-05-02 14:03:10,001 ERROR [db] query failed\n",
            "  SELECT * FROM orders\n",
            "  WHERE id = 7\n",
        ]
        entries = list(parse(lines))
        self.assertEqual(len(entries), 1)
        self.assertEqual(entries[0].message, "query failed\n  SELECT * FROM orders\n  WHERE id = 7")

    def test_leading_orphans_dropped(self):
        lines = ["  stray line from a rotated file\n", "2024-05-02 14:03:10,001 INFO [web] up\n"]
        entries = list(parse(lines))
        self.assertEqual(len(entries), 1)
        self.assertEqual(entries[0].message, "up")

    def test_crlf_continuation(self):
        lines = ["2024-05-02 14:03:10,001 ERROR [web] boom\r\n", "ValueError: x\r\n"]
        self.assertEqual(list(parse(lines))[0].message, "boom\nValueError: x")

    def test_grep_matches_traceback_text(self):
        with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
            f.write(LOG)
        self.addCleanup(os.unlink, f.name)
        out = io.StringIO()
        self.assertEqual(main(["grep", f.name, "KeyError"], out=out), 0)
        self.assertIn("Unhandled exception in job 8812", out.getvalue())
        self.assertIn("KeyError: 'customer_id'", out.getvalue())


if __name__ == "__main__":
    unittest.main()
