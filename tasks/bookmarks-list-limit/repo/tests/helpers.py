import io
import json
import tempfile
from pathlib import Path

from bm.cli import main

MARKS = [
    {"url": "https://go.dev/blog/", "title": "The Go Blog", "tags": ["go"], "added": "2024-03-01T09:00:00+00:00"},
    {"url": "https://docs.python.org/3/", "title": "Python docs", "tags": ["python"], "added": "2024-04-11T10:00:00+00:00"},
    {"url": "https://pkg.go.dev/", "title": "", "tags": ["go", "ref"], "added": "2024-05-20T08:30:00+00:00"},
    {"url": "https://lwn.net/", "title": "LWN", "tags": [], "added": "2024-01-15T12:00:00+00:00"},
    {"url": "https://go.dev/ref/spec", "title": "Go spec", "tags": ["go", "ref"], "added": "2024-02-02T07:00:00+00:00"},
]


def fixture_file(testcase, marks=MARKS) -> Path:
    d = tempfile.TemporaryDirectory()
    testcase.addCleanup(d.cleanup)
    p = Path(d.name) / "bookmarks.json"
    p.write_text(json.dumps(marks))
    return p


def run(path: Path, *argv) -> tuple[int, list[str]]:
    out = io.StringIO()
    rc = main(["--file", str(path), *argv], out=out)
    return rc, out.getvalue().splitlines()
