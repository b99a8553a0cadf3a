import tempfile
import unittest
from datetime import date
from pathlib import Path

from timesheet.store import Entry, append, load


class StoreTest(unittest.TestCase):
    def test_roundtrip(self):
        with tempfile.TemporaryDirectory() as d:
            p = Path(d) / "ts.csv"
            self.assertEqual(load(p), [])
            append(p, Entry(date(2024, 5, 6), 3.5, "client-a: API review, part 1"))
            append(p, Entry(date(2024, 5, 7), 2))
            self.assertEqual(load(p), [
                Entry(date(2024, 5, 6), 3.5, "client-a: API review, part 1"),
                Entry(date(2024, 5, 7), 2.0, ""),
            ])


if __name__ == "__main__":
    unittest.main()
