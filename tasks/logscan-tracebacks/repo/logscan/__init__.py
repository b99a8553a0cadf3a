"""Parse and query service logs."""

from .parser import Entry, parse

__all__ = ["Entry", "parse"]
