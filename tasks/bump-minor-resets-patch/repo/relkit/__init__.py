"""Release chores."""

from .version import Version, bump

__all__ = ["Version", "bump"]
