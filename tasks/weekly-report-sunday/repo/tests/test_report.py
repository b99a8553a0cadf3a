import unittest
from datetime import date

from timesheet.report import per_day, render, week_bounds, week_summary
from timesheet.store import Entry


class ReportTest(unittest.TestCase):
    def test_week_bounds(self):
        self.assertEqual(week_bounds(date(2024, 5, 8)), (date(2024, 5, 6), date(2024, 5, 12)))
        self.assertEqual(week_bounds(date(2024, 5, 6)), (date(2024, 5, 6), date(2024, 5, 12)))

    def test_week_summary_weekdays(self):
        entries = [
            Entry(date(2024, 5, 6), 3.5),
            Entry(date(2024, 5, 6), 4),
            Entry(date(2024, 5, 8), 6),
            Entry(date(2024, 5, 13), 8),  # next week
        ]
        s = week_summary(entries, date(2024, 5, 9))
        self.assertEqual(s["week"], "2024-W19")
        self.assertEqual(s["days"][0], (date(2024, 5, 6), 7.5))
        self.assertEqual(s["days"][2], (date(2024, 5, 8), 6))
        self.assertEqual(s["days"][1], (date(2024, 5, 7), 0.0))

    def test_render(self):
        out = render([(date(2024, 5, 6), 7.5), (date(2024, 5, 7), 0.0)])
        self.assertEqual(out.splitlines(), [
            "Mon 2024-05-06   7.50",
            "Tue 2024-05-07   0.00",
            "         total   7.50",
        ])

    def test_per_day_fills_gaps(self):
        days = per_day([Entry(date(2024, 5, 3), 2)], date(2024, 5, 1), date(2024, 5, 4))
        self.assertEqual([h for _, h in days][:3], [0.0, 0.0, 2])


if __name__ == "__main__":
    unittest.main()
