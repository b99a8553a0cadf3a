import argparse
import csv
import sys

from .dedupe import dedupe
from .model import Contact


def read(path: str) -> list[Contact]:
    with open(path, newline="", encoding="utf-8-sig") as f:
        return [Contact.from_row(row) for row in csv.DictReader(f)]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="contactsync")
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("merge", help="merge exports into one list")
    m.add_argument("inputs", nargs="+")
    m.add_argument("-o", "--output", default="-")
    args = p.parse_args(argv)

    contacts: list[Contact] = []
    for path in args.inputs:
        contacts.extend(read(path))
    merged = dedupe(contacts)
    out = sys.stdout if args.output == "-" else open(args.output, "w", newline="", encoding="utf-8")
    try:
        w = csv.DictWriter(out, fieldnames=["Name", "Email", "Company", "Phone"])
        w.writeheader()
        for c in merged:
            w.writerow(c.to_row())
    finally:
        if out is not sys.stdout:
            out.close()
    print(f"{len(contacts)} contacts in, {len(merged)} out", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
