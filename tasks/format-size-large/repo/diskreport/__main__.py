import argparse
import os
import shutil
import sys

from .units import format_size


def mounts():
    with open("/proc/mounts") as f:
        for line in f:
            dev, mnt, fstype = line.split()[:3]
            if dev.startswith("/dev/"):
                yield mnt, fstype


def dir_size(path: str) -> int:
    total = 0
    for root, _, files in os.walk(path, onerror=lambda e: None):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="diskreport")
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("mounts")
    top = sub.add_parser("top")
    top.add_argument("path")
    top.add_argument("--count", type=int, default=10)
    args = p.parse_args(argv)

    if args.cmd == "mounts":
        for mnt, fstype in mounts():
            u = shutil.disk_usage(mnt)
            print(f"{mnt:<24} {fstype:<6} {format_size(u.used):>10} / {format_size(u.total):>10}")
        return 0
    sizes = []
    with os.scandir(args.path) as it:
        for e in it:
            if e.is_dir(follow_symlinks=False):
                sizes.append((dir_size(e.path), e.path))
    for size, path in sorted(sizes, reverse=True)[: args.count]:
        print(f"{format_size(size):>10}  {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
