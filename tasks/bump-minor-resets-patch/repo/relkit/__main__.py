import argparse
import sys
from pathlib import Path

from .pyproject import read_version, write_version
from .version import bump


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="relkit")
    p.add_argument("--file", type=Path, default=Path("pyproject.toml"))
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("bump")
    b.add_argument("part", choices=["major", "minor", "patch"])
    sub.add_parser("current")
    args = p.parse_args(argv)

    current = read_version(args.file)
    if args.cmd == "current":
        print(current)
        return 0
    new = bump(current, args.part)
    write_version(args.file, new)
    print(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
