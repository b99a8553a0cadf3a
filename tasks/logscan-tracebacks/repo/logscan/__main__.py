import argparse
import re
import sys
from collections import Counter

from .parser import parse

LEVELS = ["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]


def show(e) -> str:
    return f"{e.time:%Y-%m-%d %H:%M:%S} {e.level:<8} [{e.source}] {e.message}"


def main(argv=None, out=None) -> int:
    out = out or sys.stdout
    p = argparse.ArgumentParser(prog="logscan")
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("errors", "count"):
        sub.add_parser(name).add_argument("file")
    g = sub.add_parser("grep")
    g.add_argument("file")
    g.add_argument("pattern")
    args = p.parse_args(argv)

    with open(args.file, encoding="utf-8", errors="replace") as f:
        entries = list(parse(f))
    if args.cmd == "errors":
        for e in entries:
            if e.level in ("ERROR", "CRITICAL"):
                print(show(e), file=out)
    elif args.cmd == "count":
        c = Counter(e.level for e in entries)
        for level in LEVELS:
            if c[level]:
                print(f"{level:<8} {c[level]}", file=out)
    else:
        rx = re.compile(args.pattern)
        for e in entries:
            if rx.search(e.message):
                print(show(e), file=out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
