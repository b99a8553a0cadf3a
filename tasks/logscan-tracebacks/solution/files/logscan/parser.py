import re
from dataclasses import dataclass
from datetime import datetime
from typing import Iterable, Iterator, Optional

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
    """Yield the entries of a log. Lines that do not start a new entry
    (tracebacks, wrapped messages) are appended to the previous entry's
    message, separated by newlines; any before the first entry are dropped."""
    current: Optional[Entry] = None
    for n, raw in enumerate(lines, 1):
        line = raw.rstrip("\r\n")
        m = LINE.match(line)
        if not m:
            if current is not None:
                current.message += "\n" + line
            continue
        if current is not None:
            yield current
        current = Entry(
            time=datetime.strptime(m["ts"], "%Y-%m-%d %H:%M:%S,%f"),
            level=m["level"],
            source=m["source"],
            message=m["message"],
            lineno=n,
        )
    if current is not None:
        yield current
