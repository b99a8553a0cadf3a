"""Cart and invoice logic."""

from .cart import Cart, Item
from .invoice import Invoice

__all__ = ["Cart", "Item", "Invoice"]
