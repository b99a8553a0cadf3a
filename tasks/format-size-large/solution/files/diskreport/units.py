import re

UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]


def format_size(n: int) -> str:
    """Format a byte count: "512 B", "1.5 KiB", "20.0 GiB"."""
    if n < 0:
        return "-" + format_size(-n)
    if n < 1024:
        return f"{n} B"
    value = float(n)
    i = 0
    # Move up while the value would print as 1024.0 or more in this unit.
    while round(value, 1) >= 1024 and i < len(UNITS) - 1:
        value /= 1024
        i += 1
    return f"{value:.1f} {UNITS[i]}"


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGTPE]?)(i?B?)\s*$", re.I)


def parse_size(text: str) -> int:
    """Parse "512", "1.5K", "20GiB", "3 MB" (binary units either way)."""
    m = _SIZE.match(text)
    if not m:
        raise ValueError(f"not a size: {text!r}")
    power = " KMGTPE".index(m[2].upper() or " ")
    return int(float(m[1]) * 1024 ** power)
