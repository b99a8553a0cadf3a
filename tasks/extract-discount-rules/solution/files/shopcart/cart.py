from dataclasses import dataclass, field

from .pricing import apply_discounts


@dataclass
class Item:
    sku: str
    price_cents: int
    qty: int = 1


@dataclass
class Cart:
    items: list[Item] = field(default_factory=list)
    codes: list[str] = field(default_factory=list)

    def add(self, sku: str, price_cents: int, qty: int = 1) -> None:
        for it in self.items:
            if it.sku == sku:
                it.qty += qty
                return
        self.items.append(Item(sku, price_cents, qty))

    def subtotal(self) -> int:
        return sum(it.price_cents * it.qty for it in self.items)

    def total(self) -> int:
        total, _ = apply_discounts(self.subtotal(), self.codes)
        return total
