"""Retry and HTTP helpers for the scrapers."""

from .retry import retry
from .http import get_json

__all__ = ["retry", "get_json"]
