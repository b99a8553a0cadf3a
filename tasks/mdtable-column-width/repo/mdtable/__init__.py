"""Markdown tables from rows."""

from .table import render

__all__ = ["render"]
