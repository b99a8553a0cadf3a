import unittest
from datetime import datetime

from logscan import parse

LOG = """\
2024-05-02 14:03:10,001 INFO [web] GET /health 200
2024-05-02 14:03:11,532 ERROR [worker-3] job 8812 failed: timeout after 30s
2024-05-02 14:03:12,900 WARNING [worker-1] queue depth 512
"""


class ParseTest(unittest.TestCase):
    def test_entries(self):
        entries = list(parse(LOG.splitlines(keepends=True)))
        self.assertEqual(len(entries), 3)
        e = entries[1]
        self.assertEqual(e.time, datetime(2024, 5, 2, 14, 3, 11, 532000))
        self.assertEqual(e.level, "ERROR")
        self.assertEqual(e.source, "worker-3")
        self.assertEqual(e.message, "job 8812 failed: timeout after 30s")
        self.assertEqual(e.lineno, 2)

    def test_crlf(self):
        entries = list(parse(["2024-05-02 14:03:10,001 INFO [web] ok\r\n"]))
        self.assertEqual(entries[0].message, "ok")


if __name__ == "__main__":
    unittest.main()
