import csv
import sys

from .table import render


def main() -> int:
    rows = list(csv.reader(sys.stdin))
    if not rows:
        return 0
    print(render(rows[0], rows[1:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
