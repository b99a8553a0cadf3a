"""Merge and deduplicate contact exports."""

from .model import Contact
from .dedupe import dedupe

__all__ = ["Contact", "dedupe"]
