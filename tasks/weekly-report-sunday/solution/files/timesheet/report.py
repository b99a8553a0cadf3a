from collections import defaultdict
from datetime import date, timedelta
from typing import Iterable, Iterator

from .store import Entry


def daterange(start: date, end: date) -> Iterator[date]:
    """Yield each day from start to end, both included."""
    day = start
    while day <= end:
        yield day
        day += timedelta(days=1)


def week_bounds(day: date) -> tuple[date, date]:
    """Monday and Sunday of the ISO week containing day."""
    monday = day - timedelta(days=day.weekday())
    return monday, monday + timedelta(days=6)


def per_day(entries: Iterable[Entry], start: date, end: date) -> list[tuple[date, float]]:
    """Hours per day for every day in the range, including days with none."""
    hours: dict[date, float] = defaultdict(float)
    for e in entries:
        hours[e.day] += e.hours
    return [(d, hours.get(d, 0.0)) for d in daterange(start, end)]


def week_summary(entries: Iterable[Entry], day: date) -> dict:
    start, end = week_bounds(day)
    days = per_day(entries, start, end)
    return {
        "week": f"{start.isocalendar().year}-W{start.isocalendar().week:02d}",
        "days": days,
        "total": sum(h for _, h in days),
    }


def render(days: list[tuple[date, float]]) -> str:
    lines = [f"{d:%a %Y-%m-%d}  {h:5.2f}" for d, h in days]
    lines.append(f"{'total':>14}  {sum(h for _, h in days):5.2f}")
    return "\n".join(lines)
