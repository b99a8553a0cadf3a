import re
from dataclasses import dataclass
from datetime import datetime
from typing import Iterable, Iterator

LINE = re.compile(
    r"^(?P<ts>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}) "
    r"(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) "
    r"\[(?P<source>[^\]]+)\] "
    r"(?P<message>.*)$"
)


@dataclass
class Entry:
    time: datetime
    level: str
    source: str
    message: str
    lineno: int  # line number of the entry's first line


def parse(lines: Iterable[str]) -> Iterator[Entry]:
    """Yield the entries of a log, one per timestamped line."""
    for n, raw in enumerate(lines, 1):
        line = raw.rstrip("\r\n")
        m = LINE.match(line)
        if not m:
            continue
        yield Entry(
            time=datetime.strptime(m["ts"], "%Y-%m-%d %H:%M:%S,%f"),
            level=m["level"],
            source=m["source"],
            message=m["message"],
            lineno=n,
        )
