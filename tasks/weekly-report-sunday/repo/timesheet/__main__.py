import argparse
import sys
from datetime import date

from . import report, store


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="timesheet")
    sub = p.add_subparsers(dest="cmd", required=True)
    lg = sub.add_parser("log")
    lg.add_argument("day", type=date.fromisoformat)
    lg.add_argument("hours", type=float)
    lg.add_argument("note", nargs="?", default="")
    wk = sub.add_parser("week")
    wk.add_argument("day", type=date.fromisoformat, nargs="?", default=date.today())
    rp = sub.add_parser("report")
    rp.add_argument("--from", dest="start", type=date.fromisoformat, required=True)
    rp.add_argument("--to", dest="end", type=date.fromisoformat, required=True)
    args = p.parse_args(argv)

    path = store.default_path()
    if args.cmd == "log":
        store.append(path, store.Entry(args.day, args.hours, args.note))
        return 0
    entries = store.load(path)
    if args.cmd == "week":
        s = report.week_summary(entries, args.day)
        print(s["week"])
        print(report.render(s["days"]))
    else:
        print(report.render(report.per_day(entries, args.start, args.end)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
