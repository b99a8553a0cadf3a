import contextlib
import io
import os
import tempfile
import unittest
from datetime import date
from pathlib import Path
from unittest import mock

from timesheet import report
from timesheet.__main__ import main
from timesheet.store import Entry, append


class InclusiveRangeTest(unittest.TestCase):
    def test_daterange_includes_end(self):
        days = list(report.daterange(date(2024, 5, 30), date(2024, 6, 2)))
        self.assertEqual(days, [date(2024, 5, 30), date(2024, 5, 31), date(2024, 6, 1), date(2024, 6, 2)])

    def test_daterange_single_day(self):
        self.assertEqual(list(report.daterange(date(2024, 5, 5), date(2024, 5, 5))), [date(2024, 5, 5)])

    def test_daterange_empty_when_reversed(self):
        self.assertEqual(list(report.daterange(date(2024, 5, 5), date(2024, 5, 4))), [])

    def test_week_summary_has_sunday(self):
        entries = [Entry(date(2024, 5, 6), 8), Entry(date(2024, 5, 12), 2.5)]
        s = report.week_summary(entries, date(2024, 5, 12))
        self.assertEqual(len(s["days"]), 7)
        self.assertEqual(s["days"][-1], (date(2024, 5, 12), 2.5))
        self.assertEqual(s["total"], 10.5)

    def test_per_day_includes_end(self):
        days = report.per_day([Entry(date(2024, 5, 31), 4)], date(2024, 5, 1), date(2024, 5, 31))
        self.assertEqual(len(days), 31)
        self.assertEqual(days[-1], (date(2024, 5, 31), 4))

    def test_report_command_month(self):
        with tempfile.TemporaryDirectory() as d:
            p = Path(d) / "ts.csv"
            append(p, Entry(date(2024, 5, 1), 1))
            append(p, Entry(date(2024, 5, 31), 4))
            append(p, Entry(date(2024, 6, 1), 9))
            out = io.StringIO()
            with mock.patch.dict(os.environ, {"TIMESHEET_FILE": str(p)}), contextlib.redirect_stdout(out):
                rc = main(["report", "--from", "2024-05-01", "--to", "2024-05-31"])
            self.assertEqual(rc, 0)
            lines = out.getvalue().splitlines()
            self.assertIn("Fri 2024-05-31   4.00", lines)
            self.assertEqual(lines[-1].split(), ["total", "5.00"])


if __name__ == "__main__":
    unittest.main()
