import argparse
import sys
from datetime import datetime, timezone
from pathlib import Path

from .store import Bookmark, Store


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bm", description="terminal bookmarks")
    p.add_argument("--file", type=Path, default=Path.home() / ".bookmarks.json")
    sub = p.add_subparsers(dest="cmd", required=True)

    add = sub.add_parser("add", help="add or update a bookmark")
    add.add_argument("url")
    add.add_argument("--title", default="")
    add.add_argument("--tag", action="append", default=[], dest="tags")

    ls = sub.add_parser("list", help="list bookmarks, newest first")
    ls.add_argument("--tag")

    rm = sub.add_parser("rm", help="remove a bookmark")
    rm.add_argument("url")
    return p


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def main(argv=None, out=None) -> int:
    out = out or sys.stdout
    args = _parser().parse_args(argv)
    store = Store(args.file)
    marks = store.load()

    if args.cmd == "add":
        for b in marks:
            if b.url == args.url:
                b.title = args.title or b.title
                b.tags = sorted(set(b.tags) | set(args.tags))
                break
        else:
            marks.append(Bookmark(args.url, args.title, sorted(set(args.tags)), _now()))
        store.save(marks)
        return 0

    if args.cmd == "rm":
        kept = [b for b in marks if b.url != args.url]
        if len(kept) == len(marks):
            print(f"bm: no bookmark for {args.url}", file=sys.stderr)
            return 1
        store.save(kept)
        return 0

    shown = sorted(marks, key=lambda b: b.added, reverse=True)
    if args.tag:
        shown = [b for b in shown if args.tag in b.tags]
    for b in shown:
        tags = " ".join("#" + t for t in b.tags)
        print(f"{b.added[:10]}  {b.title or b.url}  {b.url}  {tags}".rstrip(), file=out)
    return 0
