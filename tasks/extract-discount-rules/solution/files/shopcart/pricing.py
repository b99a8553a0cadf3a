"""Discount codes, shared by carts and invoices."""

from typing import Iterable

PERCENT_CODES = {"WELCOME10": (10, 2000)}  # code -> (percent, minimum subtotal)
FLAT_CODES = {"FLAT5": 500}


def apply_discounts(subtotal_cents: int, codes: Iterable[str]) -> tuple[int, list[str]]:
    """Apply discount codes to a subtotal.

    At most one percentage code and one flat code apply, percentages first
    (rounding half up), then flat amounts; unknown codes are ignored and the
    total never goes below zero. Returns the total and the codes applied,
    normalized, in the order they took effect.
    """
    normalized = [c.strip().upper() for c in codes]
    total = subtotal_cents
    applied: list[str] = []
    for code in normalized:
        if code in PERCENT_CODES:
            pct, minimum = PERCENT_CODES[code]
            if subtotal_cents >= minimum:
                total -= (total * pct + 50) // 100
                applied.append(code)
                break
    for code in normalized:
        if code in FLAT_CODES:
            total -= FLAT_CODES[code]
            applied.append(code)
            break
    return max(total, 0), applied
