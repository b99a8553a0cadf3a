"""Load .env files."""

from .parser import ParseError, parse
from .loader import load

__all__ = ["ParseError", "load", "parse"]
