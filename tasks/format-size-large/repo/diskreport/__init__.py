"""Disk usage reports."""

from .units import format_size, parse_size

__all__ = ["format_size", "parse_size"]
