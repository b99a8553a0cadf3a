from typing import Any, Optional, Sequence


def _cell(value: Any) -> str:
    if value is None:
        return ""
    return str(value).replace("|", "\\|").replace("\n", " ")


def _pad(text: str, width: int, align: str) -> str:
    if align == "r":
        return text.rjust(width)
    if align == "c":
        return text.center(width)
    return text.ljust(width)


def _rule(width: int, align: str) -> str:
    if align == "r":
        return "-" * (width - 1) + ":"
    if align == "c":
        return ":" + "-" * (width - 2) + ":"
    return ":" + "-" * (width - 1)


def render(headers: Sequence[Any], rows: Sequence[Sequence[Any]], align: Optional[Sequence[str]] = None) -> str:
    """Render headers and rows as a Markdown table.

    Short rows are padded with empty cells; rows longer than the header
    raise ValueError.
    """
    ncols = len(headers)
    align = list(align or [])
    align += ["l"] * (ncols - len(align))
    for a in align:
        if a not in ("l", "r", "c"):
            raise ValueError(f"bad alignment {a!r}")

    head = [_cell(h) for h in headers]
    body = []
    for i, row in enumerate(rows):
        if len(row) > ncols:
            raise ValueError(f"row {i} has {len(row)} cells, header has {ncols}")
        body.append([_cell(v) for v in row] + [""] * (ncols - len(row)))

    widths = [max(3, len(h), *(len(r[i]) for r in body)) for i, h in enumerate(head)]

    def line(cells):
        return "| " + " | ".join(_pad(c, w, a) for c, w, a in zip(cells, widths, align)) + " |"

    out = [line(head), "| " + " | ".join(_rule(w, a) for w, a in zip(widths, align)) + " |"]
    out += [line(r) for r in body]
    return "\n".join(out)
