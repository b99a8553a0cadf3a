"""Layered JSON configuration."""

from .merge import merge, merge_all
from .loader import env_layer, load

__all__ = ["env_layer", "load", "merge", "merge_all"]
