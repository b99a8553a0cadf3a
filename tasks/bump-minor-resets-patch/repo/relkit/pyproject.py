import re
from pathlib import Path

_LINE = re.compile(r'^(version\s*=\s*")([^"]*)(")', re.M)


def _project_span(text: str) -> tuple[int, int]:
    start = text.find("[project]")
    if start < 0:
        raise ValueError("no [project] table")
    nxt = re.compile(r"^\[", re.M).search(text, start + 1)
    return start, nxt.start() if nxt else len(text)


def read_version(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    a, b = _project_span(text)
    m = _LINE.search(text, a, b)
    if not m:
        raise ValueError(f"{path}: no version in [project]")
    return m[2]


def write_version(path: Path, version: str) -> None:
    text = path.read_text(encoding="utf-8")
    a, b = _project_span(text)
    m = _LINE.search(text, a, b)
    if not m:
        raise ValueError(f"{path}: no version in [project]")
    path.write_text(text[: m.start(2)] + version + text[m.end(2):], encoding="utf-8")
