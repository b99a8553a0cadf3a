import csv
import os
from dataclasses import dataclass
from datetime import date
from pathlib import Path


@dataclass(frozen=True)
class Entry:
    day: date
    hours: float
    note: str = ""


def default_path() -> Path:
    return Path(os.environ.get("TIMESHEET_FILE", Path.home() / ".timesheet.csv"))


def load(path: Path) -> list[Entry]:
    if not path.exists():
        return []
    with path.open(newline="") as f:
        return [
            Entry(date.fromisoformat(row["date"]), float(row["hours"]), row.get("note", ""))
            for row in csv.DictReader(f)
        ]


def append(path: Path, entry: Entry) -> None:
    new = not path.exists()
    with path.open("a", newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(["date", "hours", "note"])
        w.writerow([entry.day.isoformat(), f"{entry.hours:g}", entry.note])
